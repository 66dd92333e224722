"""The driver's view of its Spark tasks (NOTE [Spark task protocol]): which
registered, which are alive, which left or were lost, and the exits of the
rank processes they run.

poll() reads the store in-process (the driver serves it: no round trips) and
is called by one monitor thread (service.py) every POLL_S; everything else
may be called from any thread (one lock). Callbacks of watched ranks run on
the monitor thread, outside the lock.
"""
import dataclasses
import threading
import time

from horovod_accel.spark import protocol

POLL_S = 0.05


@dataclasses.dataclass
class TaskState:
    info: dict                   # what the task registered (protocol.parse_task_info)
    seen_at: float               # monotonic time its heartbeat last moved
    beats: bytes = None          # its heartbeat counter's last value
    gone: str = None             # why it left (it said so), once it did
    lost: bool = False           # its heartbeat stopped: it died without a word
    commands: int = 0            # commands sent to it so far

    @property
    def name(self):
        return self.info["name"]

    @property
    def alive(self):
        return self.gone is None and not self.lost


class TaskRegistry:
    def __init__(self, server, lost_after=protocol.LOST_AFTER_S, now=time.monotonic):
        self._server = server
        self._lost_after = lost_after
        self._now = now
        self._lock = threading.Lock()
        self._tasks = {}          # name -> TaskState, in registration order
        self._next_seq = 1
        self._watched = []        # RemoteRank objects whose exit is pending

    # ---- the monitor thread ----

    def poll(self):
        """Reads new registrations, heartbeats and departures; delivers the
        exits of watched ranks (their rank process ended, or their task left
        or was lost without reporting one)."""
        now = self._now()
        with self._lock:
            while True:
                value = self._server.get_local(protocol.registration_key(self._next_seq))
                if value is None:
                    break
                info = protocol.parse_task_info(value)
                self._tasks[info["name"]] = TaskState(info=info, seen_at=now)
                self._next_seq += 1
            for t in self._tasks.values():
                if not t.alive:
                    continue
                beats = self._server.get_local(protocol.alive_key(t.name))
                if beats != t.beats:
                    t.beats, t.seen_at = beats, now
                gone = self._server.get_local(protocol.gone_key(t.name))
                if gone is not None:
                    t.gone = gone.decode(errors="replace")
                elif now - t.seen_at > self._lost_after:
                    t.lost = True
            finished = []
            for rr in self._watched:
                t = self._tasks[rr.task]
                left = not t.alive  # read before the exit key: a task reports its exit first
                value = self._server.get_local(protocol.exit_key(rr.task, rr.k))
                if value is not None:
                    finished.append((rr, protocol.parse_exit(value), None))
                elif left:
                    finished.append((rr, None, self._why_left(t)))
            self._watched = [rr for rr in self._watched if rr not in [f[0] for f in finished]]
        for rr, record, why in finished:
            if record is not None:
                rr.exited(record)
            else:
                rr.lost(why)

    def _why_left(self, t):
        if t.lost:
            return (f"its Spark task {t.name} on {t.info['hostname']} was lost: no heartbeat "
                    f"for {self._lost_after:.0f} s (its executor or Python worker died)")
        return f"its Spark task {t.name} on {t.info['hostname']} ended ({t.gone})"

    # ---- any thread ----

    def alive(self):
        """Info dicts of the tasks alive now, in registration order."""
        with self._lock:
            return [t.info for t in self._tasks.values() if t.alive]

    def counts(self):
        """(registered, alive)."""
        with self._lock:
            return len(self._tasks), sum(1 for t in self._tasks.values() if t.alive)

    def info(self, name):
        with self._lock:
            return self._tasks[name].info

    def reserve_command(self, name):
        """The index of the next command to task `name` (taken: the caller sends it)."""
        with self._lock:
            t = self._tasks[name]
            t.commands += 1
            return t.commands - 1

    def start(self, rr, command):
        """Sends task rr.task its start command rr.k (from reserve_command)
        and watches rr. A task already gone or lost reports rr lost at the
        next poll."""
        with self._lock:
            self._server.set_local(protocol.command_key(rr.task, rr.k), command)
            self._watched.append(rr)

    def stop_all(self):
        """Sends every alive task a stop command (the job is over)."""
        with self._lock:
            for t in self._tasks.values():
                if t.alive:
                    self._server.set_local(protocol.command_key(t.name, t.commands),
                                           protocol.stop_command())
                    t.commands += 1
