"""Upstream modules whose file has another name here (horovod/__init__.py
RENAMED_MODULES): `horovod.spark.runner` is horovod_accel/spark/run_api.py
and `horovod.ray.runner` is horovod_accel/ray/executor.py. Their upstream
names import the same module object (no second copy of the code), in every
spelling users write. Each case runs in a fresh interpreter, so that no
earlier import hides a missing mapping.
"""
import importlib.util
import subprocess
import sys
import textwrap

import pytest

from launch_util import job_env

import horovod

TIMEOUT = 120


def _python(code):
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=job_env(),
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def _needs(module):
    return pytest.mark.skipif(importlib.util.find_spec(module) is None,
                              reason=f"needs {module}")


def test_every_renamed_module_exists_and_the_old_file_is_gone():
    for upstream, real in horovod.RENAMED_MODULES.items():
        package, _, leaf = real.rpartition(".")
        assert importlib.util.find_spec(package) is not None, real
        # horovod_accel keeps one module per purpose: no file under the upstream name.
        upstream_leaf = upstream.rpartition(".")[2]
        assert upstream_leaf != leaf
        assert importlib.util.find_spec(f"{package}.{upstream_leaf}") is None, upstream


@_needs("ray")
def test_horovod_ray_runner_in_every_spelling():
    _python("""
        import sys
        import horovod.ray
        import horovod_accel.ray.executor as executor
        assert horovod.ray.runner is executor          # an attribute, as upstream's package has
        from horovod.ray.runner import Coordinator, MiniSettings, RayExecutor
        assert RayExecutor is horovod.ray.RayExecutor and Coordinator is executor.Coordinator
        import horovod.ray.runner
        assert sys.modules["horovod.ray.runner"] is executor
        assert executor.__spec__.name == "horovod_accel.ray.executor"
    """)
    _python("""
        from horovod.ray.runner import Coordinator   # first import of all: the package comes too
        import horovod_accel.ray.executor as executor
        assert Coordinator is executor.Coordinator
    """)


@_needs("pyspark")
def test_horovod_spark_runner_in_every_spelling():
    _python("""
        import sys
        import horovod.spark
        assert "horovod_accel.spark.run_api" not in sys.modules   # still imported lazily
        from horovod.spark.runner import run, run_elastic
        import horovod_accel.spark.run_api as run_api
        assert run is run_api.run is horovod.spark.run and run_elastic is horovod.spark.run_elastic
        import horovod.spark.runner
        assert horovod.spark.runner is run_api and sys.modules["horovod.spark.runner"] is run_api
    """)


def test_other_modules_keep_their_mapping():
    _python("""
        import horovod.runner.run_api, horovod_accel.runner.run_api
        assert horovod.runner.run_api is horovod_accel.runner.run_api
        import horovod.conformance.run_suite
    """)
