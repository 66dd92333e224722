"""RankError: what a launcher that runs a function on every rank (horovod.run,
horovod.spark, horovod.ray) raises in the caller when a rank failed."""


class RankError(RuntimeError):
    """A rank of a horovod.run job failed.

    rank, hostname: where; how: 'raised ValueError', 'exit code 3', ...;
    exc_type, message, remote_traceback: the exception func raised on that
    rank (None when the rank died without one); exception: that exception,
    unpickled (None if it could not be); stderr_tail: the rank's last stderr
    lines when it died without an exception.
    """

    def __init__(self, text, rank, hostname=None, how=None, exc_type=None, message=None,
                 remote_traceback=None, exception=None, stderr_tail=()):
        super().__init__(text)
        self.rank = rank
        self.hostname = hostname
        self.how = how
        self.exc_type = exc_type
        self.message = message
        self.remote_traceback = remote_traceback
        self.exception = exception
        self.stderr_tail = list(stderr_tail)
