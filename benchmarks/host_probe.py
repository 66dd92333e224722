"""How fast this host moves memory between two CPUs right now.

VMs of the kind the benchmarks run on have phases, minutes long, in which
memory that one vCPU wrote reaches another vCPU about 5x slower than usual,
while single-CPU memcpy keeps its speed (measured 2026-11-26 for the hand-off
below: 2.3-2.4 GB/s in slow phases, 12-14 GB/s usually, 33 GB/s in fast ones;
benchmarks/README.md). Shared-memory
collectives that hand data between the ranks' CPUs (horovod_accel's shm
backend) slow down with it, so a benchmark round taken in such a phase says
more about the VM than about the code. allreduce.py runs this probe before
every round and prints what it read.
"""
import ctypes
import mmap
import os
import time

_libc = ctypes.CDLL(None)
_libc.memmove.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
_libc.memmove.restype = ctypes.c_void_p

SLOW_GBPS = 5.0  # below this, rounds are flagged as taken in a slow phase


def _await_turn(turn, value, deadline):
    while turn.value != value:
        if time.monotonic() > deadline:
            raise TimeoutError("host probe: the other process did not take its turn")


def cross_cpu_handoff_gbps(mib=1, rounds=100, timeout=10.0):
    """GB/s of handing `mib` MiB back and forth between two processes pinned to
    two different CPUs: one copies its private buffer into a shared mapping,
    then the other copies it out, `rounds` times (2 x mib MiB moved per round).
    None if this process may run on fewer than 2 CPUs, or if the probe did not
    finish within `timeout` seconds. Takes about 0.1 s."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None
    n = mib << 20
    shared = mmap.mmap(-1, n + 64, flags=mmap.MAP_SHARED)  # inherited by the child
    base = ctypes.addressof(ctypes.c_char.from_buffer(shared))
    turn = ctypes.c_int64.from_address(base + n)
    private = mmap.mmap(-1, n)
    mine = ctypes.addressof(ctypes.c_char.from_buffer(private))
    ctypes.memset(mine, 1, n)
    deadline = time.monotonic() + timeout
    pid = os.fork()
    if pid == 0:  # the reader, on the second CPU; never outlives the deadline
        try:
            os.sched_setaffinity(0, {cpus[1]})
            for i in range(rounds):
                _await_turn(turn, 2 * i + 1, deadline)
                _libc.memmove(mine, base, n)
                turn.value = 2 * i + 2
        finally:
            os._exit(0)
    saved = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {cpus[0]})
        t0 = time.perf_counter()
        for i in range(rounds):
            _await_turn(turn, 2 * i, deadline)
            _libc.memmove(base, mine, n)
            turn.value = 2 * i + 1
        _await_turn(turn, 2 * rounds, deadline)
        elapsed = time.perf_counter() - t0
    except TimeoutError:
        return None
    finally:
        os.sched_setaffinity(0, saved)
        os.waitpid(pid, 0)
    return 2 * n * rounds / elapsed / 1e9


if __name__ == "__main__":
    gbps = cross_cpu_handoff_gbps()
    print("cross-CPU hand-off: n/a (fewer than 2 CPUs)" if gbps is None
          else f"cross-CPU hand-off: {gbps:.1f} GB/s"
          + (" (slow phase)" if gbps < SLOW_GBPS else ""))
