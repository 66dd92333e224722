"""The body of every Spark task of a horovod.spark job (the function the
driver's Spark job maps over its partitions): registers with the driver,
keeps a heartbeat, and runs the rank processes the driver starts on it
(NOTE [Spark task protocol] in horovod_accel/spark/protocol.py).

run():         one rank process, then the task returns (barrier mode).
run_elastic(): rank processes one after another until the driver says stop;
               after a rank process fails the task leaves the job and, if
               Spark may still retry it (spark.task.maxFailures), fails, so
               that Spark starts a replacement attempt, which registers as
               new capacity.

Runs inside a Spark Python worker, on its main thread (rank_child.run_rank
needs that); every thread and connection it opens is closed before it
returns, so a reused worker carries nothing over.
"""
import dataclasses
import os
import socket
import threading

from horovod_accel.rendezvous.client import StoreClient, StoreError, StoreTimeoutError
from horovod_accel.spark import protocol
from horovod_accel.spark.task import rank_child

_COMMAND_POLL_S = 1.0


@dataclasses.dataclass(frozen=True)
class TaskConfig:
    """What every task of a job gets inside the pickled closure of the Spark
    job: where the driver's store is and its secret (never printed: repr
    hides it), and the job's mode."""
    store_host: str
    store_port: int
    secret: str = dataclasses.field(repr=False)
    elastic: bool = False
    max_failures: int = 1        # spark.task.maxFailures as the driver sees it
    connect_timeout: float = 60.0


class DriverLost(RuntimeError):
    """The driver's store cannot be reached any more (the driver ended)."""


def host_id():
    """This machine as the core tells hosts apart (csrc/common/runtime.cc
    ThisHost: host name, boot id, mount namespace): ranks with the same id
    share memory, so the driver groups them as one host."""
    parts = [socket.gethostname()]
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            parts.append(f.read().strip())
    except OSError:
        pass
    try:
        parts.append(os.readlink("/proc/self/ns/mnt"))
    except OSError:
        pass
    return "/".join(parts)


def _identity(partition):
    from pyspark import TaskContext  # noqa: PLC0415 - present in every Spark worker
    ctx = TaskContext.get()
    attempt = ctx.attemptNumber() if ctx is not None else 0
    resources = {}
    if ctx is not None:
        resources = {n: list(r.addresses) for n, r in (ctx.resources() or {}).items()}
    return {"name": protocol.task_name(partition, attempt), "partition": int(partition),
            "attempt": int(attempt), "host_id": host_id(), "hostname": socket.gethostname(),
            "pid": os.getpid(), "resources": resources}


class _Heartbeat:
    """A daemon thread that ADDs to the task's alive counter every
    HEARTBEAT_S on its own connection (owned; closed by stop()). `lost` is
    set when the driver's store stops answering."""

    def __init__(self, store, name):
        self._store = store
        self._key = protocol.alive_key(name)
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._store.add(self._key, 1)
        self._thread = threading.Thread(target=self._run, name=f"hvda-spark-alive-{name}",
                                        daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.wait(protocol.HEARTBEAT_S):
            try:
                self._store.add(self._key, 1)
            except StoreError:
                self.lost.set()
                return

    def stop(self):
        self._stop.set()
        self._thread.join()
        self._store.close()


def _next_command(store, name, k, lost):
    """Blocks until the driver sends command k; raises DriverLost."""
    while not lost.is_set():
        try:
            return protocol.parse_command(store.get(protocol.command_key(name, k),
                                                    timeout=_COMMAND_POLL_S))
        except StoreTimeoutError:
            continue
        except StoreError as e:
            raise DriverLost(f"horovod.spark task {name}: lost the driver ({e})") from None
    raise DriverLost(f"horovod.spark task {name}: the driver's store stopped answering")


def _serve(cfg, ident, store, connect, heartbeat):
    """Runs the driver's commands; returns the rank processes' exit codes."""
    name, codes, k = ident["name"], [], 0
    while True:
        cmd = _next_command(store, name, k, heartbeat.lost)
        if cmd["kind"] == "stop":
            return codes
        code = rank_child.run_rank(cmd, k, name, store, connect, cfg.secret,
                                   ident["resources"], heartbeat.lost)
        codes.append(code)
        k += 1
        if heartbeat.lost.is_set():
            raise DriverLost(f"horovod.spark task {name}: lost the driver while its rank ran")
        if not cfg.elastic or code != 0:
            return codes


def run(cfg, partition, _rows=()):
    """The Spark task: mapPartitionsWithIndex(functools.partial(run, cfg)).
    Yields (task name, [exit codes of its rank processes])."""
    ident = _identity(partition)
    name = ident["name"]

    def connect():
        return StoreClient(cfg.store_host, cfg.store_port, cfg.secret, cfg.connect_timeout)

    with connect() as store:
        store.set(protocol.registration_key(store.add(protocol.REGISTERED_KEY, 1)),
                  protocol.format_task_info(ident))
        heartbeat = _Heartbeat(connect(), name)
        reason = "finished"
        try:
            codes = _serve(cfg, ident, store, connect, heartbeat)
            if codes and codes[-1] != 0:
                reason = f"its rank process exited with code {codes[-1]}"
        except BaseException as e:
            reason = f"{type(e).__name__}: {e}"
            raise
        finally:
            try:
                store.set(protocol.gone_key(name), reason)
            except StoreError:
                pass
            heartbeat.stop()
    if cfg.elastic and codes and codes[-1] != 0 and ident["attempt"] + 1 < cfg.max_failures:
        # Elastic: the driver has already dropped this attempt; failing it
        # makes Spark start another attempt, which registers as new capacity.
        raise RuntimeError(f"horovod.spark task {name}: its rank process failed ({reason}); "
                           f"failing attempt {ident['attempt']} so that Spark retries the task")
    yield name, codes
