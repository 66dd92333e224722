"""The Python view of the one settings table (horovod_accel/common/settings.py)
and the JobSpec init() hands the core (horovod_accel/common/job.py): values
parse as the core parses them, every launcher-set setting reaches the core
explicitly, and no Python module repeats a setting's default."""
import re
import subprocess
import sys

import pytest
from launch_util import REPO

from horovod_accel.common import job, settings


def test_table_has_every_scope_and_consistent_rows():
    rows = settings.table()
    scopes = {row["scope"] for row in rows}
    assert scopes == {"job", "core", "python"}
    names = settings.names()
    assert len(names) == len(set(names)), "a setting is listed twice"
    for row in rows:
        assert row["doc"], row["name"]
        # Every default parses as its setting's type and lies in its range.
        settings.default(row["name"])


def test_values_parse_as_the_core_parses_them():
    env = {"HOROVOD_FUSION_THRESHOLD": "64", "HOROVOD_CYCLE_TIME": "2.5",
           "HOROVOD_AUTOTUNE": "yes", "HOROVOD_ELASTIC": "3abc",
           "HOROVOD_HIERARCHICAL_ALLREDUCE": "0", "HOROVOD_CONTROLLER": "mpi"}
    assert settings.read("HOROVOD_FUSION_THRESHOLD", env) == 64
    assert settings.read("HOROVOD_CYCLE_TIME", env) == 2.5
    assert settings.read("HOROVOD_AUTOTUNE", env) is True
    assert settings.read("HOROVOD_ELASTIC", env) is True  # upstream: strtol(v) > 0
    assert settings.read("HOROVOD_HIERARCHICAL_ALLREDUCE", env) is False
    assert settings.read("HOROVOD_HIERARCHICAL_ALLGATHER", env) is None  # unset: the core decides
    assert settings.read("HOROVOD_CONTROLLER", env) == "mpi"
    # Unset and empty give the table's default.
    assert settings.read("HOROVOD_START_TIMEOUT", {}) == 30.0
    assert settings.read("HOROVOD_START_TIMEOUT", {"HOROVOD_START_TIMEOUT": ""}) == 30.0
    assert settings.read("HOROVOD_THREADS_PER_RANK", {}) == "auto"


@pytest.mark.parametrize("name,value,expect", [
    ("HOROVOD_FUSION_THRESHOLD", "12abc",
     "HOROVOD_FUSION_THRESHOLD='12abc' is not a valid integer (fusion buffer bytes"),
    ("HOROVOD_START_TIMEOUT", "soon", "HOROVOD_START_TIMEOUT='soon' is not a valid number"),
    ("HOROVOD_SHM_SEGMENT_BYTES", "100", "HOROVOD_SHM_SEGMENT_BYTES=100 must be >= 4096"),
    ("HOROVOD_GLOO_RENDEZVOUS_PORT", "70000", "must be in [-1, 65535]"),
])
def test_bad_values_name_the_variable(name, value, expect):
    with pytest.raises(ValueError, match=re.escape(expect)):
        settings.read(name, {name: value})


def test_unknown_names_are_refused():
    with pytest.raises(KeyError, match="HOROVOD_NO_SUCH_THING"):
        settings.read("HOROVOD_NO_SUCH_THING", {})


def test_every_launcher_setting_reaches_the_job_spec():
    from horovod_accel import _core
    fields = _core.JobSpec()
    for row in settings.table():
        if row["scope"] == "job" and row["name"] != "HOROVOD_HOSTNAME":  # the core never needs it
            assert hasattr(fields, row["field"]), f"{row['name']} is set by launchers but not passed"
    spec = job.job_spec({"HOROVOD_RANK": "1", "HOROVOD_SIZE": "3", "HOROVOD_LOCAL_SIZE": "2",
                         "HOROVOD_GLOO_RENDEZVOUS_ADDR": "10.0.0.1",
                         "HOROVOD_GLOO_RENDEZVOUS_PORT": "1234", "_HOROVOD_SECRET_KEY": "s",
                         "_HOROVOD_ELASTIC_ROUND": "4"})
    assert (spec.rank, spec.size, spec.local_rank, spec.local_size) == (1, 3, 0, 2)
    assert (spec.store_addr, spec.store_port, spec.secret) == ("10.0.0.1", 1234, "s")
    assert spec.elastic_round == 4 and spec.mpi_shim == ""
    with pytest.raises(ValueError, match="HOROVOD_RANK='one'"):
        job.job_spec({"HOROVOD_RANK": "one"})


# A setting of the table read with a literal default (`environ.get("NAME",
# "30")`, `env.get("NAME") or 30`, `getenv("NAME", ...)`) repeats the table; read it through
# horovod_accel.common.settings instead.
_DEFAULTED_READ = re.compile(r"""(?:environ|env)\.get\(\s*["']([A-Z_]+)["']\s*(?:,|\)\s*or\b)|"""
                             r"""getenv\(\s*["']([A-Z_]+)["']\s*,""")


def test_no_python_module_repeats_a_settings_default():
    for sample in ('os.environ.get("HOROVOD_CYCLE_TIME", "1")', 'env.get("HOROVOD_CYCLE_TIME") or 1',
                   'os.getenv("HOROVOD_CYCLE_TIME", "1")'):
        assert _DEFAULTED_READ.search(sample), f"the scan misses {sample}"
    assert not _DEFAULTED_READ.search('env.get("HOROVOD_CYCLE_TIME")')  # no default: fine
    known = set(settings.names())
    offenders = []
    for path in sorted((REPO / "horovod_accel").rglob("*.py")):
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            for match in _DEFAULTED_READ.finditer(line):
                name = match.group(1) or match.group(2)
                if name in known:
                    offenders.append(f"{path.relative_to(REPO)}:{lineno}: {name}")
    assert not offenders, "read these through horovod_accel.common.settings:\n" + "\n".join(
        offenders)


def test_init_talks_to_the_core_without_the_environment():
    """init(process_sets='dynamic') enables dynamic sets without writing
    HOROVOD_DYNAMIC_PROCESS_SETS into os.environ (the JobSpec and init()'s
    arguments carry everything)."""
    code = ("import os, horovod.torch as hvd\n"
            "before = dict(os.environ)\n"
            "hvd.init(process_sets='dynamic')\n"
            "ps = hvd.add_process_set([0])\n"
            "assert ps.size() == 1\n"
            "added = sorted(k for k in os.environ if k not in before\n"
            "               and k.startswith(('HOROVOD', '_HOROVOD')))\n"
            "assert added == [], added\n"
            "hvd.shutdown()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       check=False)
    assert r.returncode == 0, r.stdout + r.stderr
