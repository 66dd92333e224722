"""Collecting what the workers' calls return, in rank order, and turning a
failed call into one error that names its rank.

A call fails when the user's code raised (Ray's RayTaskError) or the actor
died (RayActorError: killed, out of memory, its node lost). When one rank
fails its peers usually fail too, as a consequence (the failed rank's
Horovod job was shut down: they see HorovodInternalError, or a lost peer);
the error raised names the cause: an actor that died, else a rank whose
exception is not HorovodInternalError, else the first failure seen.
"""
import re
import threading

import ray

from horovod_accel.common.exceptions import HorovodInternalError
from horovod_accel.runner.rank_error import RankError

_TAIL_LINES = 12
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# After the first failure, how long the others get to end before the error
# is raised (they usually fail at once: the failed rank ended the job); what
# ended by then is reported with it. Never delays a call that succeeds.
FAILURE_GRACE_S = 1.0


class Failure:
    """One failed call: where (rank, node), how, and the exception."""

    def __init__(self, rank, where, error):
        self.rank = rank
        self.where = where          # e.g. "rank 1 (node 10.0.0.2)"
        self.error = error          # the ray.exceptions.RayError
        self.cause = getattr(error, "cause", None) if isinstance(
            error, ray.exceptions.RayTaskError) else None

    @property
    def actor_died(self):
        return isinstance(self.error, ray.exceptions.RayActorError)

    @property
    def consequential(self):
        """True for a HorovodInternalError: a peer's failure ended the job."""
        return isinstance(self.cause, HorovodInternalError)

    def how(self):
        """'raised ValueError: msg', or "its actor died (<Ray's reason>)"."""
        if self.cause is not None:
            return f"raised {type(self.cause).__name__}: {self.cause}"
        if self.actor_died:
            reason = self.death_reason()
            return "its actor died" + (f" ({reason})" if reason else "")
        return f"failed: {type(self.error).__name__}: {self.error}"

    def death_reason(self):
        """Ray's last line about a dead actor (e.g. "The actor is dead because
        it was killed by `ray.kill`."), or None."""
        lines = [ln.strip() for ln in str(self.error).splitlines() if ln.strip()]
        return lines[-1] if self.actor_died and lines else None

    def remote_traceback(self):
        """The traceback on the worker (Ray's text of a RayTaskError), or None."""
        if self.cause is None:
            return None
        return _ANSI.sub("", str(self.error)).rstrip()

    def traceback_lines(self):
        """The last lines of the remote traceback (none if the actor died)."""
        return (self.remote_traceback() or "").splitlines()[-_TAIL_LINES:]

    def to_error(self, others=()):
        """The RankError to raise (its __cause__ should be self.error)."""
        text = f"horovod.ray: {self.where} {self.how()}"
        tb = self.remote_traceback()
        if tb:
            text += f"\n\nTraceback on {self.where}:\n{tb}"
        if others:
            text += "\nalso failed: " + "; ".join(f"{o.where} {o.how()}" for o in others)
        exc_type = type(self.cause).__name__ if self.cause is not None else None
        return RankError(text, self.rank, self.where, self.how(), exc_type,
                         str(self.cause) if self.cause is not None else None, tb, self.cause)


def pick_cause(failures):
    """The failure to report among those seen (list, in the order seen)."""
    for test in (lambda f: f.actor_died, lambda f: not f.consequential):
        hits = [f for f in failures if test(f)]
        if hits:
            return hits[0]
    return failures[0]


def gather(refs, where):
    """Blocks until every call of `refs` (one per rank, rank order) ended;
    returns their values in rank order. `where[i]` describes rank i for
    messages. On the first failure, raises RankError naming the cause among
    the calls that have ended by then, without waiting for the others."""
    index = {ref: i for i, ref in enumerate(refs)}
    values = [None] * len(refs)
    pending = list(refs)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        failures = _collect(ready, index, values, where)
        if failures:
            if pending:
                done, pending = ray.wait(pending, num_returns=len(pending),
                                         timeout=FAILURE_GRACE_S)
                failures += _collect(done, index, values, where)
            _reap(pending)
            cause = pick_cause(failures)
            raise cause.to_error([f for f in failures if f is not cause]) from cause.error
    return values


def _reap(refs):
    """Fetches (and drops) the results of calls still running after a failure,
    on a daemon thread, so that their errors are not reported again by Ray as
    unhandled. The thread ends when they do."""
    if not refs:
        return

    def fetch():
        for ref in refs:
            try:
                ray.get(ref)
            except ray.exceptions.RayError:
                pass

    threading.Thread(target=fetch, name="hvda-ray-reap", daemon=True).start()


def _collect(ready, index, values, where):
    failures = []
    for ref in ready:
        i = index[ref]
        try:
            values[i] = ray.get(ref)
        except ray.exceptions.RayError as e:
            failures.append(Failure(i, where[i], e))
    return failures
