"""horovod.run (horovod_accel/runner/run_api.py, run_task.py): results in rank
order from real jobs (torch allreduce) at np 1, 2, 3, args/kwargs, an
exception on one rank raised in the caller naming it, a rank that dies
(os._exit) reported within seconds, argument errors, the lazy `horovod.run`
attribute; and horovod.runner.util.threads.

The callers of horovod.run run in subprocesses with a hard timeout: this file
run as a script (`python test_run_api.py CASE ...`) is the caller, so the
functions below travel to the ranks by value (they live in __main__).
"""
import json
import os
import shutil
import sys
import threading
import time

import pytest

from launch_util import REPO, run, tail

HERE = os.path.abspath(__file__)
TIMEOUT = 120


# ------------------------------------------------------- functions the ranks run

def allreduce_rank(x, scale=1):
    import horovod.torch as hvd  # noqa: PLC0415
    import torch  # noqa: PLC0415
    hvd.init()
    total = hvd.allreduce(torch.tensor([float(hvd.rank())]), op=hvd.Sum, name="sum").item()
    print(f"hello from rank {hvd.rank()}", flush=True)
    return {"rank": hvd.rank(), "size": hvd.size(), "value": x * scale + total}


def raise_on_rank_1():
    import horovod.torch as hvd  # noqa: PLC0415
    import torch  # noqa: PLC0415
    hvd.init()
    if hvd.rank() == 1:
        raise ValueError("bad value on rank 1")
    hvd.allreduce(torch.ones(1), name="never")  # rank 1 never joins
    return hvd.rank()


def exit_on_rank_1():
    import horovod.torch as hvd  # noqa: PLC0415
    import torch  # noqa: PLC0415
    hvd.init()
    if hvd.rank() == 1:
        os._exit(3)
    hvd.allreduce(torch.ones(1), name="never")
    return hvd.rank()


def env_rank():
    return int(os.environ["HOROVOD_RANK"])


def mpi_rank():
    return int(os.environ["OMPI_COMM_WORLD_RANK"] if "OMPI_COMM_WORLD_RANK" in os.environ
               else os.environ["PMI_RANK"])


def elastic_steps(marker_dir, steps):
    """An elastic func: rank 1 SIGKILLs itself once at step 2; the job goes
    on with the survivor, whose committed state is restored."""
    import signal  # noqa: PLC0415
    import torch  # noqa: PLC0415
    import horovod.torch as hvd  # noqa: PLC0415
    hvd.init()
    state = hvd.elastic.ObjectState(step=0, sizes=[])

    @hvd.elastic.run
    def train(state):
        while state.step < steps:
            marker = os.path.join(marker_dir, "killed")
            if state.step == 2 and hvd.rank() == 1 and not os.path.exists(marker):
                open(marker, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
            hvd.allreduce(torch.ones(1), name="step")
            state.sizes.append(hvd.size())
            state.step += 1
            state.commit()
        return {"rank": hvd.rank(), "size": hvd.size(), "sizes": state.sizes}

    return train(state)


# ------------------------------------------------------------------ the caller

def _report(**kw):
    print("RESULT " + json.dumps(kw), flush=True)


def _error_fields(e):
    return {"type": type(e).__name__, "is_runtime": isinstance(e, RuntimeError),
            "rank": getattr(e, "rank", None), "text": str(e),
            "cause": type(e.__cause__).__name__ if e.__cause__ is not None else None}


def caller(case, *argv):
    import horovod  # noqa: PLC0415
    if case == "results":
        for np_ in map(int, argv):
            t0 = time.monotonic()
            out = horovod.run(allreduce_rank, args=(5,), kwargs={"scale": 2}, num_proc=np_)
            _report(np=np_, results=out, seconds=round(time.monotonic() - t0, 2))
    elif case in ("raise", "exit"):
        func = raise_on_rank_1 if case == "raise" else exit_on_rank_1
        t0 = time.monotonic()
        try:
            out = horovod.run(func, num_proc=2)
        except BaseException as e:  # noqa: BLE001
            _report(seconds=round(time.monotonic() - t0, 2), **_error_fields(e))
        else:
            _report(returned=out)
    elif case == "module":
        # A function from a module only the caller's sys.path finds, a
        # result larger than one store chunk, the deprecated np=, output_filename.
        sys.path.insert(0, argv[0])
        import hvda_run_api_helper  # noqa: PLC0415
        out = horovod.run(hvda_run_api_helper.big, args=(33 << 20,), np=2,
                          output_filename=os.path.join(argv[0], "logs"))
        _report(sizes=[len(b) for b in out], heads=[b[:1].decode() for b in out])
    elif case == "elastic":
        out = horovod.run(elastic_steps, args=(argv[0], 5), num_proc=2, min_num_proc=1,
                          hosts="localhost:1,127.0.0.1:1")
        _report(results=out)
    elif case == "mpi":
        out = horovod.run(mpi_rank, num_proc=2, use_mpi=True, mpi_args="--oversubscribe")
        _report(results=out)


def run_caller(case, *argv, timeout=TIMEOUT):
    r = run([sys.executable, HERE, case, *map(str, argv)], timeout=timeout)
    results = [json.loads(line[len("RESULT "):]) for line in r.stdout.splitlines()
               if line.startswith("RESULT ")]
    return r, results


# ------------------------------------------------------------------ the tests

def test_results_in_rank_order_np_1_2_3():
    r, results = run_caller("results", 1, 2, 3)
    assert r.returncode == 0, tail(r)
    assert [x["np"] for x in results] == [1, 2, 3], tail(r)
    for res in results:
        n = res["np"]
        total = n * (n - 1) / 2
        assert res["results"] == [{"rank": k, "size": n, "value": 10 + total} for k in range(n)], \
            tail(r)
    # The ranks' output reaches the caller's stdout, prefixed like horovodrun's.
    for k in range(3):
        assert f"[{k}]<stdout>:hello from rank {k}" in r.stdout, tail(r)


def test_exception_on_rank_1_is_raised_in_the_caller():
    r, results = run_caller("raise")
    assert r.returncode == 0 and len(results) == 1, tail(r)
    e = results[0]
    assert e["type"] == "RankError" and e["is_runtime"] and e["rank"] == 1, tail(r)
    assert e["cause"] == "ValueError", tail(r)
    assert "rank 1" in e["text"] and "raised ValueError: bad value on rank 1" in e["text"], e
    assert "Traceback" in e["text"] and "raise_on_rank_1" in e["text"], e
    assert e["seconds"] < 30, e


def test_rank_that_exits_gives_a_clear_error_quickly():
    r, results = run_caller("exit")
    assert r.returncode == 0 and len(results) == 1, tail(r)
    e = results[0]
    assert e["type"] == "RankError" and e["rank"] == 1, tail(r)
    assert "rank 1 (host localhost) failed with exit code 3 before returning a result" in \
        e["text"], e
    # Fail-fast: ranks start in a few seconds; then rank 0 is stopped at once.
    assert e["seconds"] < 30, e


def test_function_from_callers_path_and_large_results(tmp_path):
    (tmp_path / "hvda_run_api_helper.py").write_text(
        "import os\n"
        "def big(n):\n"
        "    print('big', n, flush=True)\n"
        "    return str(os.environ['HOROVOD_RANK']).encode() * n\n")
    r, results = run_caller("module", tmp_path)
    assert r.returncode == 0 and results, tail(r)
    assert results[0] == {"sizes": [33 << 20, 33 << 20], "heads": ["0", "1"]}, tail(r)
    for k in range(2):
        assert (tmp_path / "logs" / f"rank.{k}" / "stdout").read_text() == f"big {33 << 20}\n"


def test_use_mpi_launches_through_mpirun():
    # The ranks only read their MPI rank: test_mpi_launch.py covers jobs under mpirun.
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun is not installed")
    from horovod_accel.common import mpi  # noqa: PLC0415
    if not mpi.built_flavours():
        pytest.skip("horovod_accel was built without an MPI shim")
    r, results = run_caller("mpi")
    assert r.returncode == 0 and results, tail(r)
    assert results[0]["results"] == [0, 1], tail(r)


def test_elastic_run_returns_the_last_rounds_results(tmp_path):
    r, results = run_caller("elastic", tmp_path)
    assert r.returncode == 0 and results, tail(r)
    assert results[0]["results"] == [{"rank": 0, "size": 1, "sizes": [2, 2, 1, 1, 1]}], tail(r)


@pytest.mark.parametrize("kwargs, error, needle", [
    (dict(hosts="localhost:2", hostfile="hosts.txt"), ValueError, "hosts or hostfile"),
    (dict(use_gloo=True, use_mpi=True), ValueError, "use_gloo and use_mpi"),
    (dict(min_np=1), ValueError, "elastic mode needs hosts"),
    (dict(max_num_proc=4), ValueError, "max_num_proc only applies to elastic jobs"),
    (dict(reset_limit=1), ValueError, "reset_limit only applies to elastic jobs"),
    (dict(cooldown_range=(1, 2)), ValueError, "cooldown_range only applies to elastic jobs"),
    (dict(min_num_proc=3, num_proc=2, hosts="localhost:3"), ValueError,
     "--min-np 3 is larger than -np 2"),
    (dict(num_proc=0), ValueError, "num_proc must be a positive integer"),
    (dict(num_proc=3, hosts="localhost:2"), ValueError, "only 2 slots"),
    (dict(start_timeout=-1), ValueError, "start_timeout"),
    (dict(args=(threading.Lock(),)), TypeError, "picklable"),
])
def test_bad_arguments_fail_before_launching(kwargs, error, needle):
    import horovod  # noqa: PLC0415
    with pytest.warns(DeprecationWarning) if "min_np" in kwargs else _no_warning():
        with pytest.raises(error, match=needle):
            horovod.run(env_rank, **kwargs)


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_func_must_be_callable():
    import horovod  # noqa: PLC0415
    with pytest.raises(TypeError, match="callable"):
        horovod.run("not a function")


def test_missing_executable_is_a_clear_error(capfd):
    import horovod  # noqa: PLC0415
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="could not start rank 0 .*no-such-python"):
        horovod.run(env_rank, num_proc=2, executable="/nonexistent/no-such-python")
    assert time.monotonic() - t0 < 15


def test_horovod_run_is_lazy_and_importable_everywhere():
    code = ("import sys, horovod, horovod_accel\n"
            "assert 'horovod_accel.runner.run_api' not in sys.modules\n"
            "f = horovod.run\n"
            "from horovod.runner import run\n"
            "import horovod.runner, horovod_accel.runner\n"
            "assert f is run is horovod_accel.run is horovod.runner.run is "
            "horovod_accel.runner.run\n"
            "from horovod.runner.util.threads import in_thread, execute_function_multithreaded\n"
            "print('OK')\n")
    r = run([sys.executable, "-c", code], timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "OK", tail(r)


# ------------------------------------------- horovod.runner.util.threads

def test_threads_in_thread():
    from horovod.runner.util.threads import in_thread  # noqa: PLC0415
    got = []
    t = in_thread(got.append, args=(1,), name="hvda-test")
    t.join(10)
    assert got == [1] and t.daemon and t.name == "hvda-test"
    assert not in_thread(lambda: None, daemon=False).daemon
    with pytest.raises(ValueError, match="must be a tuple"):
        in_thread(got.append, args=[1])

    def boom():
        raise KeyError("x")
    seen = []
    old, threading.excepthook = threading.excepthook, seen.append
    try:
        in_thread(boom, silent=True).join(10)
        assert seen == []
        in_thread(boom).join(10)
        assert len(seen) == 1 and seen[0].exc_type is KeyError
    finally:
        threading.excepthook = old


def test_threads_on_event():
    from horovod.runner.util.threads import on_event  # noqa: PLC0415
    event, stop, got = threading.Event(), threading.Event(), []
    t = on_event(event, got.append, args=("fired",))
    event.set()
    t.join(10)
    assert got == ["fired"]
    t = on_event(threading.Event(), got.append, args=("never",), stop=stop,
                 check_stop_interval_s=0.01, daemon=False)
    stop.set()
    t.join(10)
    assert not t.is_alive() and got == ["fired"]
    with pytest.raises(ValueError, match="Stop event must be given"):
        on_event(event, got.append, daemon=False)
    with pytest.raises(ValueError, match="Event must not be None"):
        on_event(None, got.append)


def test_threads_execute_function_multithreaded():
    from horovod.runner.util.threads import execute_function_multithreaded  # noqa: PLC0415
    lock, running, peak = threading.Lock(), [0], [0]

    def add(a, b):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1
        return a + b

    args = [[i, 10 * i] for i in range(8)]  # upstream passes lists
    assert execute_function_multithreaded(add, args, max_concurrent_executions=3) == \
        {i: 11 * i for i in range(8)}
    assert args == [[i, 10 * i] for i in range(8)]  # not modified
    assert 1 <= peak[0] <= 3
    assert execute_function_multithreaded(add, [(1, 2)] * 3) == {0: 3, 1: 3, 2: 3}
    assert execute_function_multithreaded(add, []) == {}
    done = threading.Event()
    assert execute_function_multithreaded(lambda: done.set(), [[]],
                                          block_until_all_done=False) is None
    assert done.wait(10)

    def fail_on_2(i):
        if i == 2:
            raise OSError("host 2 unreachable")
        return i
    old, threading.excepthook = threading.excepthook, lambda a: None
    try:
        with pytest.raises(RuntimeError, match="Some threads for func fail_on_2 did not "
                                               "complete successfully") as info:
            execute_function_multithreaded(fail_on_2, [[i] for i in range(4)])
    finally:
        threading.excepthook = old
    assert isinstance(info.value.__cause__, OSError)


if __name__ == "__main__":
    caller(*sys.argv[1:])
