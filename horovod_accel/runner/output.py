"""Forwards each rank's stdout/stderr to horovodrun's own, line by line,
prefixed like upstream's Gloo launcher: `[<rank>]<stdout>:<line>`
(with --prefix-output-with-timestamp: `<asctime>[<rank>]<stdout>:<line>`).

With --output-filename DIR the raw lines (no prefix) also go to
DIR/rank.<padded rank>/stdout and .../stderr.
"""
import collections
import os
import sys
import threading
import time

# Serialises writes to horovodrun's stdout/stderr so lines never interleave.
_CONSOLE_LOCK = threading.Lock()

STDERR_TAIL_LINES = 20
_MAX_LINE = 1 << 16  # longer lines are forwarded in pieces


def padded_rank(rank, size):
    """Rank zero-padded to the width of size-1 so directories sort (upstream's rule)."""
    return str(rank).zfill(len(str(max(size - 1, 0))))


def rank_output_dir(base, rank, size):
    return os.path.join(base, f"rank.{padded_rank(rank, size)}")


class StreamForwarder:
    """Reads one pipe of one rank on its own daemon thread until EOF.

    Owns `pipe` (closes it at EOF) and `file` (closes it in join()). Keeps the
    last `tail_lines` lines when tail_lines > 0 (for failure reports).
    """

    def __init__(self, pipe, rank, stream_name, console, file=None, timestamp=False, tail_lines=0):
        self._pipe = pipe
        self._prefix = f"[{rank}]<{stream_name}>:"
        self._console = console
        self._file = file
        self._timestamp = timestamp
        self.tail = collections.deque(maxlen=tail_lines) if tail_lines else None
        self._thread = threading.Thread(target=self._run, name=f"hvda-fwd-{rank}-{stream_name}",
                                        daemon=True)

    def start(self):
        self._thread.start()
        return self

    def _run(self):
        try:
            while True:
                raw = self._pipe.readline(_MAX_LINE)
                if not raw:
                    break
                line = raw.decode("utf-8", errors="replace")
                if not line.endswith("\n"):
                    line += "\n"
                self._emit(line)
        except (OSError, ValueError):
            pass  # pipe closed under us during shutdown
        finally:
            try:
                self._pipe.close()
            except OSError:
                pass

    def _emit(self, line):
        stamp = time.asctime() if self._timestamp else ""
        with _CONSOLE_LOCK:
            try:
                self._console.write(f"{stamp}{self._prefix}{line}")
                self._console.flush()
            except (OSError, ValueError):
                pass  # our own stdout is gone (closed pipe); keep draining the rank
        if self._file is not None:
            self._file.write(line)
            self._file.flush()
        if self.tail is not None:
            self.tail.append(line.rstrip("\n"))

    def join(self, timeout):
        """Waits up to `timeout` s for EOF; returns True if the stream ended."""
        self._thread.join(timeout)
        done = not self._thread.is_alive()
        if done and self._file is not None:
            self._file.close()
            self._file = None
        return done


def forward_rank_output(proc, rank, size, output_dir=None, timestamp=False):
    """Starts forwarders for proc.stdout and proc.stderr; returns (out, err)."""
    out_file = err_file = None
    if output_dir:
        d = rank_output_dir(output_dir, rank, size)
        os.makedirs(d, exist_ok=True)
        out_file = open(os.path.join(d, "stdout"), "w", encoding="utf-8")
        err_file = open(os.path.join(d, "stderr"), "w", encoding="utf-8")
    out = StreamForwarder(proc.stdout, rank, "stdout", sys.stdout, out_file, timestamp).start()
    err = StreamForwarder(proc.stderr, rank, "stderr", sys.stderr, err_file, timestamp,
                          tail_lines=STDERR_TAIL_LINES).start()
    return out, err


def console_message(msg):
    """Prints a horovodrun message to stderr, every line prefixed 'horovodrun: ',
    without interleaving with forwarded rank lines. The launcher's console,
    like the ranks' forwarded output, is program output, not library logging
    (common/log.py): it shares the lock that keeps lines whole."""
    text = "".join(f"horovodrun: {line}\n" for line in msg.split("\n"))
    with _CONSOLE_LOCK:
        sys.stderr.write(text)
        sys.stderr.flush()
