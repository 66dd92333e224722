"""The worker side of the elastic rendezvous (protocol: elastic_protocol.py,
NOTE [Elastic rounds]): which round the next init() joins, with which
topology, and whether the driver has announced a host change.

One ElasticWorker per process, owned by DEFAULT_RUNTIME and created only in
workers that horovodrun's elastic driver started (HOROVOD_ELASTIC=1 and a
worker id in the environment). Called from the thread that runs init() and
State.commit(); its store connection is its own.
"""
import os

from horovod_accel.common import elastic_protocol as proto
from horovod_accel.common import settings
from horovod_accel.rendezvous.client import StoreClient, StoreError, StoreTimeoutError


class WorkerRemoved(Exception):
    """The driver dropped this worker from the job (its host was removed or
    blacklisted, or the job shrank); the process should exit quietly."""


def in_elastic_job(env=None):
    env = os.environ if env is None else env
    return settings.read("HOROVOD_ELASTIC", env) and bool(env.get(proto.WORKER_ID_ENV))


class ElasticWorker:
    def __init__(self, env=None):
        env = os.environ if env is None else env
        self.worker_id = env[proto.WORKER_ID_ENV]
        self._spawn_round = int(env.get(proto.SPAWN_ROUND_ENV, "1"))
        self._assignment_timeout = float(env.get(proto.ASSIGNMENT_TIMEOUT_ENV, "900"))
        self.round = 0        # the last round this worker was assigned to (0: none yet)
        self.hosts_seq = 0    # the host-update sequence number that round was formed at
        self._store = None

    def _client(self):
        if self._store is None:
            self._store = StoreClient.from_env()
        return self._store

    def join_next_round(self):
        """Blocks until the driver assigns this worker to its next round;
        returns the environment the core's init() needs for it (HOROVOD_RANK,
        ..., the round). A survivor first tells the driver it is ready.
        Raises WorkerRemoved if the driver dropped this worker, RuntimeError if
        the driver is unreachable or never forms the round."""
        store = self._client()
        if self.round == 0:
            target = self._spawn_round
        else:
            store.set(proto.ready_key(self.round, self.worker_id), b"1")
            target = self.round + 1
        try:
            value = store.get(proto.assignment_key(target, self.worker_id),
                              timeout=self._assignment_timeout)
        except StoreTimeoutError:
            raise RuntimeError(
                f"elastic worker {self.worker_id}: horovodrun did not form round {target} within "
                f"{self._assignment_timeout:.0f} s; the job is probably waiting for hosts "
                f"(--min-np, --elastic-timeout) or stopping; see horovodrun's output") from None
        except StoreError as e:
            raise RuntimeError(f"elastic worker {self.worker_id} lost horovodrun's rendezvous "
                               f"store ({e}); the launcher probably exited") from None
        parsed = proto.parse_assignment(value)
        self.round = target
        if parsed is None:
            raise WorkerRemoved(f"this worker ({self.worker_id}, host "
                                f"{settings.read('HOROVOD_HOSTNAME')}) was removed from the "
                                f"elastic job in round {target}; exiting")
        topology, self.hosts_seq = parsed
        env = {f"HOROVOD_{k.upper()}": str(v) for k, v in topology.items()}
        env[proto.ROUND_ENV] = str(target)
        return env

    def host_event(self):
        """(pending, added): whether the driver announced a host change since
        this worker's round was formed, and whether any such change added
        hosts (else the survivors may skip the state sync). One store read."""
        try:
            value = self._client().get(proto.HOSTS_EVENT_KEY, timeout=0)
        except StoreTimeoutError:
            value = None
        seq, last_add = proto.parse_hosts_event(value)
        return seq > self.hosts_seq, last_add > self.hosts_seq
