"""The emulated vendor stack (tests/emulated/): the runtime self-test, the
names each library exports, and every collective checked across separate
processes through the ECCL and the NCCL names at 1, 2 and 3 ranks, plus a
peer killed mid-collective and a rendezvous that times out. Every process
runs under a hard timeout; no shared-memory segment may outlive a run."""
import os
import re
import shutil
import subprocess
import time

import pytest

import emulated_build

TIMEOUT = 180  # seconds, for one job of 1-3 processes

RUNTIME_NAMES = [
    "GetDeviceCount", "SetDevice", "GetDevice", "Malloc", "Free", "Memcpy", "MemcpyAsync",
    "MemsetAsync", "StreamCreateWithFlags", "StreamDestroy", "StreamSynchronize",
    "StreamWaitEvent", "EventCreateWithFlags", "EventDestroy", "EventQuery", "EventSynchronize",
    "EventRecord", "LaunchHostFunc", "GetLastError", "GetErrorString"]
CCL_NAMES = [
    "GetVersion", "GetErrorString", "GetUniqueId", "CommInitRank", "CommDestroy", "CommAbort",
    "CommGetAsyncError", "AllReduce", "Broadcast", "AllGather", "ReduceScatter", "Send", "Recv",
    "GroupStart", "GroupEnd", "RedOpCreatePreMulSum", "RedOpDestroy"]
EXPORTS = {  # API_SUBSET.md, exactly
    "libtopsrt_emu.so": {"tops" + n for n in RUNTIME_NAMES} | {"topsHostMalloc", "topsHostFree"},
    "libcudart_emu.so": {"cuda" + n for n in RUNTIME_NAMES} | {"cudaHostAlloc", "cudaFreeHost"},
    "libeccl_emu.so": {"eccl" + n for n in CCL_NAMES} | {"ecclAllGatherV", "ecclAlltoAllv"},
    "libnccl_emu.so": {"nccl" + n for n in CCL_NAMES},
}
CHECKS = ["allreduce", "allreduce_bit_identical", "broadcast", "allgather", "reduce_scatter",
          "send_recv", "zero_counts", "invalid_arguments", "grouped_collectives",
          "two_communicators", "large_allreduce", "one_rank_scaling", "no_async_error"]


@pytest.fixture(scope="module", autouse=True)
def built():
    return emulated_build.build()


def env(**extra):
    """This environment minus HOROVOD_* / HVDA_EMU_*, plus the emulated
    libraries' paths for both plugins, plus extra."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("HOROVOD_", "HVDA_EMU_"))}
    e.update(emulated_build.plugin_env("gcu"))
    e.update(emulated_build.plugin_env("cuda"))
    e.update({k: str(v) for k, v in extra.items()})
    return e


def shm_segments():
    return {n for n in os.listdir("/dev/shm") if n.startswith("hvda_emu_")}


def start_ranks(api, nranks, tmp_path, mode="checks", ranks=None, **extra):
    """Starts emu_ccl_check for each of `ranks` (default: all) of nranks."""
    checker = emulated_build.program("emu_ccl_check")
    return [subprocess.Popen([str(checker), "--api", api, "--rank", str(r), "--nranks",
                              str(nranks), "--dir", str(tmp_path), "--mode", mode],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=env(**extra))
            for r in (range(nranks) if ranks is None else ranks)]


def finish(procs, timeout=TIMEOUT):
    """[(exit status, output)] of every process; kills all and fails the
    test when one runs past the deadline."""
    deadline = time.monotonic() + timeout
    results = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=max(1, deadline - time.monotonic()))
            results.append((p.returncode, out))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            outs = [q.communicate()[0] for q in procs]
            pytest.fail(f"ranks did not finish within {timeout} s:\n" +
                        "\n".join(f"--- rank {r}:\n{o[-4000:]}" for r, o in enumerate(outs)))
    return results


def test_selftest():
    r = subprocess.run([str(emulated_build.program("emu_selftest"))], capture_output=True,
                       text=True, timeout=TIMEOUT, env=env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"^10 tests, 0 failed$", r.stdout, re.M), r.stdout


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs nm (binutils)")
def test_each_library_exports_exactly_its_vendor_names():
    for lib, want in EXPORTS.items():
        out = subprocess.run(["nm", "-D", "--defined-only", str(emulated_build.library(lib))],
                             capture_output=True, text=True, check=True, timeout=60).stdout
        functions = {line.split()[2] for line in out.splitlines()
                     if len(line.split()) == 3 and line.split()[1] == "T"}
        assert functions == want, (lib, sorted(functions ^ want))


@pytest.mark.parametrize("nranks", [1, 2, 3])
@pytest.mark.parametrize("api", ["eccl", "nccl"])
def test_collectives(api, nranks, tmp_path):
    before = shm_segments()
    results = finish(start_ranks(api, nranks, tmp_path))
    for rank, (rc, out) in enumerate(results):
        assert rc == 0, f"rank {rank} exited {rc}:\n{out[-6000:]}"
        passed = set(re.findall(r"^PASS (\S+)$", out, re.M))
        want = set(CHECKS) | ({"allgatherv", "alltoallv"} if api == "eccl" else set())
        assert passed == want, f"rank {rank}: {sorted(want - passed)} did not pass\n{out[-6000:]}"
    hashes = [re.findall(r"^HASH .*$", out, re.M) for _, out in results]
    assert hashes[0], "no HASH lines"
    for rank, h in enumerate(hashes[1:], 1):
        assert h == hashes[0], f"rank {rank}'s results differ from rank 0's"
    assert shm_segments() <= before, "a shared-memory segment outlived the run"


def test_collectives_through_tiny_channels(tmp_path):
    """4 KiB channels: every exchange wraps its rings and is chunked."""
    results = finish(start_ranks("eccl", 3, tmp_path, HVDA_EMU_CHANNEL_BYTES=4096))
    for rank, (rc, out) in enumerate(results):
        assert rc == 0, f"rank {rank} exited {rc}:\n{out[-6000:]}"


@pytest.mark.parametrize("api,lost_peer_error", [("eccl", 2), ("nccl", 6)])
def test_dead_peer_sets_async_error_and_abort_unblocks(api, lost_peer_error, tmp_path):
    before = shm_segments()
    survivor, victim = start_ranks(api, 2, tmp_path, mode="deadpeer")
    deadline = time.monotonic() + 60
    while not (tmp_path / "enqueued").exists():
        if survivor.poll() is not None or time.monotonic() > deadline:
            victim.kill()
            victim.wait()
            out = finish([survivor])[0][1]
            pytest.fail(f"rank 0 never enqueued the collective:\n{out}")
        time.sleep(0.02)
    victim.kill()  # not reaped until rank 0 is done: a zombie must count as gone
    [(rc, out)] = finish([survivor], timeout=60)
    victim.wait()
    assert rc == 0, out
    m = re.search(r"^DEADPEER async_error=(\d+) detect_s=([\d.]+)$", out, re.M)
    assert m, out
    assert int(m[1]) == lost_peer_error, out
    assert float(m[2]) < 5, out
    assert shm_segments() <= before


def test_init_times_out_without_peers(tmp_path):
    """Rank 1 of 2 never comes: rank 0's CommInitRank fails after
    HVDA_EMU_INIT_TIMEOUT_SECONDS and leaves no segment behind."""
    before = shm_segments()
    t0 = time.monotonic()
    [(rc, out)] = finish(start_ranks("nccl", 2, tmp_path, ranks=[0],
                                     HVDA_EMU_INIT_TIMEOUT_SECONDS=1), timeout=60)
    assert rc != 0 and "1 of 2 ranks arrived" in out, out
    assert time.monotonic() - t0 < 30
    assert shm_segments() <= before
