"""horovod.torch through the real launcher at world sizes 1, 2 and 3.

Each worker script (torch_scripts/) runs many checks in one job and asserts
on every rank, so a job costs one start-up. Every job has a hard timeout.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launch_util import REPO, horovodrun, horovodrun_script

SCRIPTS = Path(__file__).resolve().parent / "torch_scripts"
HARD_TIMEOUT = 120


def run_job(np_, script, *args, **extra_env):
    return horovodrun_script(np_, script, *args, timeout=HARD_TIMEOUT, **extra_env)


def assert_all_ranks_ok(r, np_):
    assert r.returncode == 0, f"exit {r.returncode}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"
    for rank in range(np_):
        assert f"ALL OK rank {rank}" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("np_", [1, 2, 3])
@pytest.mark.parametrize("script", ["reduce_ops", "gather_ops", "semantics", "autograd_ops",
                                    "state_ops"])
def test_torch_script(script, np_):
    r = run_job(np_, SCRIPTS / f"{script}.py")
    assert_all_ranks_ok(r, np_)


@pytest.mark.parametrize("np_", [1, 2, 3])
def test_compiled_ops(np_):
    # torch.compile traces every collective (torch_scripts/compiled_ops.py).
    # The longer timeout covers inductor compiling C++ on a cold cache.
    r = horovodrun_script(np_, SCRIPTS / "compiled_ops.py", timeout=400)
    assert_all_ranks_ok(r, np_)


def test_import_does_not_load_dynamo():
    # The custom ops register at import; Dynamo (a second to import) loads
    # only when the user compiles.
    code = "import sys, horovod.torch; assert 'torch._dynamo' not in sys.modules"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_reduce_ops_without_response_cache_or_fusion():
    # The same results with every negotiation on the slow path and no fusion.
    r = run_job(2, SCRIPTS / "reduce_ops.py", HOROVOD_CACHE_CAPACITY=0, HOROVOD_FUSION_THRESHOLD=0)
    assert_all_ranks_ok(r, 2)


def run_launcher(argv, **extra_env):
    return horovodrun(argv, HARD_TIMEOUT, **extra_env)


def test_shm_is_chosen_when_all_ranks_share_a_host():
    r = run_launcher(["-np", 2, sys.executable, SCRIPTS / "backend_report.py"])
    assert_all_ranks_ok(r, 2)
    assert "BACKENDS rank 0: shm,gloo" in r.stdout, r.stdout


@pytest.mark.parametrize("script", ["reduce_ops", "gather_ops"])
def test_ops_over_gloo_only(script):
    # HOROVOD_CPU_OPERATIONS=gloo: data and negotiation go over Gloo's TCP
    # transport, the path used when a process set spans several hosts.
    r = run_launcher(["-np", 3, sys.executable, SCRIPTS / f"{script}.py"],
                     HOROVOD_CPU_OPERATIONS="gloo")
    assert_all_ranks_ok(r, 3)
    r = run_launcher(["-np", 2, sys.executable, SCRIPTS / "backend_report.py"],
                     HOROVOD_CPU_OPERATIONS="gloo")
    assert_all_ranks_ok(r, 2)
    assert "BACKENDS rank 0: gloo" in r.stdout, r.stdout


def test_host_list_naming_this_machine_twice_still_uses_shared_memory():
    # 127.0.0.2 is this machine under another name: its rank still shares
    # /dev/shm with the others, so the shm backend serves the whole job.
    r = run_launcher(["-np", 3, "-H", "localhost:2,127.0.0.2:1", sys.executable,
                      SCRIPTS / "backend_report.py"])
    assert_all_ranks_ok(r, 3)
    assert "BACKENDS rank 0: shm,gloo" in r.stdout, r.stdout


def test_example_training_script():
    r = run_job(2, REPO / "examples" / "pytorch" / "pytorch_synthetic_mlp.py", "--epochs", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "loss fell" in r.stdout, r.stdout


def test_horovod_alias_package(tmp_path):
    code = (
        "import sys, horovod, horovod.torch as hvd, horovod_accel.torch as accel\n"
        "from horovod.common.exceptions import HorovodInternalError\n"
        "from horovod.common.process_sets import ProcessSet\n"
        "from horovod.torch.mpi_ops import allreduce\n"
        "import horovod.common.basics, horovod.common.util, horovod.runner\n"
        "assert hvd is accel and allreduce is accel.allreduce\n"
        "assert HorovodInternalError is hvd.HorovodInternalError and ProcessSet is hvd.ProcessSet\n"
        "assert sys.modules['horovod.torch.mpi_ops'] is sys.modules['horovod_accel.torch.mpi_ops']\n"
        "assert hvd.__spec__.name == 'horovod_accel.torch'\n"
        "assert horovod.__version__ == '0.28.1'\n"
        "hvd.init(); print('size', hvd.size())\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=HARD_TIMEOUT)
    assert r.returncode == 0 and "size 1" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-m", "horovod.runner.launch", "--help"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=HARD_TIMEOUT)
    assert r.returncode == 0 and "horovodrun" in r.stdout, r.stdout + r.stderr
