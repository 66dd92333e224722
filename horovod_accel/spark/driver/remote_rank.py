"""Ranks that run in Spark tasks, as the launcher's job watchers see them.

SparkRankLauncher is the launcher hook (rank_process.LaunchSettings.launcher)
through which horovodrun's own machinery starts ranks: the static job's
fail-fast (runner/job.py) for horovod.spark.run and the elastic driver
(runner/elastic/driver.py) for run_elastic. Instead of a local or ssh
process, it sends a start command to a Spark task and returns a RemoteRank,
which has RankProcess's interface: its exit comes from the task's report,
or is declared when the task is lost (registry.py); signals travel to the
task through the store.
"""
import collections
import subprocess
import sys
import threading

from horovod_accel.rendezvous.client import StoreError, StoreTimeoutError
from horovod_accel.runner import output, rank_process
from horovod_accel.spark import protocol

_READ_POLL_S = 0.5
_WRITE_LOCK = threading.Lock()  # whole batches of lines, never interleaved


class _RemoteExit:
    """Stands in for the rank's Popen: returncode is None until the exit is known."""
    pid = None

    def __init__(self):
        self.returncode = None
        self._done = threading.Event()

    def set(self, returncode):
        self.returncode = returncode
        self._done.set()

    def poll(self):
        return self.returncode

    def wait(self, timeout=None):
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired("horovod.spark rank", timeout)
        return self.returncode


class OutputPump:
    """Reads one rank process's output batches from the store on a daemon
    thread, through `store` (a StoreClient it owns and closes), and writes
    them to the driver's `stdout`/`stderr` streams. Ends at the task's end
    marker, or at stop() (the task was lost). `tail` is filled from the
    exit report (the last stderr lines)."""

    def __init__(self, store, task, k, stdout, stderr):
        self.tail = collections.deque(maxlen=output.STDERR_TAIL_LINES)
        self._store = store
        self._streams = {"stdout": stdout, "stderr": stderr}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(task, k),
                                        name=f"hvda-spark-pump-{task}-{k}", daemon=True)
        self._thread.start()

    def _write(self, batch):
        with _WRITE_LOCK:
            for stream, text in batch:
                out = self._streams.get(stream)
                try:
                    out.write(text)
                    out.flush()
                except (OSError, ValueError, AttributeError):
                    pass  # the user's stream is closed: keep draining

    def _run(self, task, k):
        n = 0
        try:
            while True:
                key = protocol.output_key(task, k, n)
                try:
                    value = self._store.get(key, timeout=_READ_POLL_S)
                except StoreTimeoutError:
                    if self._stop.is_set():
                        return
                    continue
                batch = protocol.parse_output(value)
                self._store.delete(key)
                n += 1
                if batch is None:
                    return
                self._write(batch)
        except StoreError:
            return  # the store is shutting down
        finally:
            self._store.close()

    def stop(self):
        """Stops reading after what is already there (the writer is gone)."""
        self._stop.set()

    def join(self, timeout):
        """Waits up to `timeout` s for the end of the output; True if reached."""
        self._thread.join(timeout)
        return not self._thread.is_alive()


class RemoteRank(rank_process.RankProcess):
    """The k-th rank process of Spark task `task`; `pump` reads its output."""

    def __init__(self, slot, task, k, server, pump, on_exit):
        super().__init__(slot, _RemoteExit(), False, pump, pump)
        self.task = task
        self.k = k
        self._server = server
        self._on_exit = on_exit
        self._signals = 0
        self._how = None
        self._lock = threading.Lock()

    def signal_group(self, sig):
        """Asks the task to signal the rank's process group; ignored once it exited."""
        with self._lock:
            if self.proc.returncode is not None:
                return
            self._server.set_local(protocol.signal_key(self.task, self.k, self._signals),
                                   str(int(sig)))
            self._signals += 1

    def describe_exit(self):
        return self._how or super().describe_exit()

    # ---- called by the registry's monitor thread, once ----

    def exited(self, record):
        self.err.tail.extend(record.get("tail") or ())
        self._how = record.get("how")
        self.proc.set(record["returncode"])
        self._on_exit(self)

    def lost(self, why):
        self._how = why
        self.err.stop()
        self.proc.set(1)
        self._on_exit(self)


class SparkRankLauncher:
    """Starts ranks in Spark tasks: `task_of(slot)` names the task of a
    slot; `connect()` opens a StoreClient to the driver's store (each output
    pump owns one). Rank output goes to `stdout`/`stderr` (default: the
    driver's own)."""

    def __init__(self, registry, server, connect, task_of, executable=None, stdout=None,
                 stderr=None):
        self._registry = registry
        self._server = server
        self._connect = connect
        self._task_of = task_of
        self._executable = executable
        self._stdout = stdout or sys.stdout
        self._stderr = stderr or sys.stderr

    def __call__(self, settings, slot, store_addr, remote, on_exit, extra_env=None, label=None):
        """rank_process.launch_rank's signature; `remote` is ignored (every
        rank is remote: it runs in a Spark task)."""
        task = self._task_of(slot)
        env = dict(settings.env)
        env.update(rank_process.slot_env(slot, store_addr, settings.store_port, ""))
        del env[rank_process.SECRET_ENV]  # the task has it; the rank reads it on stdin
        env.update(extra_env or {})
        k = self._registry.reserve_command(task)
        pump = OutputPump(self._connect(), task, k, self._stdout, self._stderr)
        rr = RemoteRank(slot, task, k, self._server, pump, on_exit)
        self._registry.start(rr, protocol.start_command(env, self._executable, slot.rank,
                                                        slot.size, settings.timestamp_output))
        if settings.verbose:
            info = self._registry.info(task)
            output.console_message(f"started {label or f'rank {slot.rank}'} in Spark task {task} "
                                   f"on {info['hostname']} (task pid {info['pid']})")
        return rr
