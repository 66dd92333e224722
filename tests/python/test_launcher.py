"""horovodrun: hosts/slots, flags -> env, the rendezvous store (Python server,
Python and C++ clients), output forwarding and fail-fast. Worker scripts are
plain Python (no core needed); every subprocess has a hard timeout."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from horovod_accel.runner import args as args_mod
from horovod_accel.runner import check_build, hosts, output, rank_process, tunables
from horovod_accel.rendezvous.client import StoreAuthError, StoreClient, StoreError, StoreTimeoutError
from horovod_accel.rendezvous.server import RendezvousStoreServer

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parent / "launcher_scripts"
TIMEOUT = 60


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.pop("HOROVOD_CPU_OPERATIONS", None)
    return env


def horovodrun(*argv, timeout=TIMEOUT):
    cmd = [sys.executable, "-m", "horovod_accel.runner.launch", *map(str, argv)]
    t0 = time.monotonic()
    r = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=timeout)
    r.elapsed = time.monotonic() - t0
    return r


def script(name):
    return [sys.executable, str(SCRIPTS / name)]


# ---------------------------------------------------------------- hosts


def test_parse_hosts_and_assign_slots():
    hs = hosts.parse_hosts("a:2,b:1")
    assert hs == [hosts.Host("a", 2), hosts.Host("b", 1)]
    got = [(s.hostname, s.rank, s.local_rank, s.local_size, s.cross_rank, s.cross_size, s.size)
           for s in hosts.assign_slots(hs, 3)]
    assert got == [("a", 0, 0, 2, 0, 2, 3), ("a", 1, 1, 2, 0, 1, 3), ("b", 2, 0, 1, 1, 2, 3)]


def test_assign_slots_fills_hosts_in_order_and_stops_at_np():
    slots = hosts.assign_slots(hosts.parse_hosts("a:2,b:2,c:4"), 3)
    assert [(s.hostname, s.local_rank, s.local_size) for s in slots] == \
        [("a", 0, 2), ("a", 1, 2), ("b", 0, 1)]
    assert [(s.cross_rank, s.cross_size) for s in slots] == [(0, 2), (0, 1), (1, 2)]


def test_host_errors():
    with pytest.raises(ValueError, match="only 2 slots"):
        hosts.assign_slots(hosts.parse_hosts("a:2"), 3)
    with pytest.raises(ValueError, match="expected <hostname>:<slots>"):
        hosts.parse_hosts("a:two")
    with pytest.raises(ValueError, match="more than once"):
        hosts.parse_hosts("a:1,a:2")
    assert hosts.parse_hosts("solo") == [hosts.Host("solo", 1)]


def test_parse_hostfile(tmp_path):
    f = tmp_path / "hosts"
    f.write_text("# cluster\nworker-0 slots=4\n\nworker-1   slots=2  # comment\n")
    assert hosts.parse_hostfile(str(f)) == [hosts.Host("worker-0", 4), hosts.Host("worker-1", 2)]
    f.write_text("worker-0 slots=x\n")
    with pytest.raises(ValueError, match="line 1"):
        hosts.parse_hostfile(str(f))


def test_padded_rank():
    assert [output.padded_rank(r, n) for r, n in [(0, 1), (9, 10), (3, 11), (7, 101)]] == \
        ["0", "9", "03", "007"]


# ---------------------------------------------------------------- flags


def test_tunable_flags_map_to_upstream_env():
    a = args_mod.parse_args(
        ["-np", "2", "--fusion-threshold-mb", "32", "--cycle-time-ms", "2.5", "--cache-capacity", "0",
         "--timeline-filename", "/tmp/t.json", "--timeline-mark-cycles", "--no-stall-check",
         "--stall-check-warning-time-seconds", "5", "--stall-check-shutdown-time-seconds", "9",
         "--log-level", "DEBUG", "--log-without-timestamp", "--gloo-timeout-seconds", "12",
         "--thread-affinity", "0,1", "--start-timeout", "7", "--network-interfaces", "eth0,eth1",
         "--autotune", "--autotune-log-file", "at.csv", "--hierarchical-allreduce",
         "python", "train.py", "--lr", "1"])
    assert a.command == ["python", "train.py", "--lr", "1"]
    assert tunables.env_from_args(a) == {
        "HOROVOD_FUSION_THRESHOLD": str(32 * 1024 * 1024), "HOROVOD_CYCLE_TIME": "2.5",
        "HOROVOD_CACHE_CAPACITY": "0", "HOROVOD_TIMELINE": "/tmp/t.json",
        "HOROVOD_TIMELINE_MARK_CYCLES": "1", "HOROVOD_STALL_CHECK_DISABLE": "1",
        "HOROVOD_STALL_CHECK_TIME_SECONDS": "5", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "9",
        "HOROVOD_LOG_LEVEL": "DEBUG", "HOROVOD_LOG_HIDE_TIME": "1",
        "HOROVOD_GLOO_TIMEOUT_SECONDS": "12", "HOROVOD_THREAD_AFFINITY": "0,1",
        "HOROVOD_START_TIMEOUT": "7", "HOROVOD_GLOO_IFACE": "eth0", "NCCL_SOCKET_IFNAME": "eth0,eth1",
        "HOROVOD_AUTOTUNE": "1", "HOROVOD_AUTOTUNE_LOG": "at.csv",
        "HOROVOD_HIERARCHICAL_ALLREDUCE": "1"}
    assert tunables.env_from_args(args_mod.parse_args(["-np", "1", "true"])) == {}


@pytest.mark.parametrize("flags,needle", [
    (["--jsrun"], "--jsrun is not supported"),
    (["--mpi", "--gloo"], "argument --gloo: not allowed with argument --mpi"),
    (["--min-np", "1"], "elastic mode needs hosts"),
    (["--reset-limit", "1"], "--reset-limit only applies to elastic jobs"),
    (["--config-file", "c.yaml"], "--config-file is not supported yet"),
    (["--fusion-threshold-mb", "-1"], "must be >= 0"),
])
def test_unsupported_or_bad_flags_fail_clearly(flags, needle):
    r = horovodrun("-np", "1", *flags, "true")
    assert r.returncode == 2 and needle in r.stderr, r.stderr


def test_missing_np_and_version():
    r = horovodrun("true")
    assert r.returncode == 2 and "-np/--num-proc" in r.stderr
    r = horovodrun("--version")
    # The bare version first, as upstream prints it, then what the build is.
    import horovod_accel  # noqa: PLC0415
    assert r.returncode == 0 and r.stdout.split()[0] == horovod_accel.__version__, r.stdout
    assert "core built by " in r.stdout, r.stdout


def test_np_exceeds_slots():
    r = horovodrun("-np", "3", "-H", "localhost:2", "true")
    assert r.returncode == 2
    assert "requested 3 processes (-np) but the hosts provide only 2 slots" in r.stderr


def test_check_build_render():
    info = {"version": "0.1.0", "gloo_built": True, "mpi_built": False, "nccl_built": 0,
            "ddl_built": False, "ccl_built": False, "controllers": ["gloo"],
            "cpu_operations": ["shm", "gloo"], "devices": ["cpu"]}
    text = check_build.render(info, {"TensorFlow": False, "PyTorch": True, "MXNet": False})
    assert text.splitlines()[:5] == ["Horovod v0.1.0:", "", "Available Frameworks:",
                                     "    [ ] TensorFlow", "    [X] PyTorch"]
    for line in ["    [ ] MPI", "    [X] Gloo", "    [ ] NCCL", "    [X] Shared memory (shm)",
                 "    [ ] JAX"]:
        assert line in text


def test_check_build_command():
    r = horovodrun("--check-build")
    try:
        check_build.load_build_info()
    except check_build.CoreNotBuilt:
        assert r.returncode == 1 and "pip install -e ." in r.stderr
    else:
        assert r.returncode == 0 and "Available Tensor Operations:" in r.stdout, r.stderr


def test_ssh_command_keeps_secret_off_the_command_line():
    env = {"HOROVOD_RANK": "3", rank_process.SECRET_ENV: "topsecret", "X": "a b", "SSH_AUTH_SOCK": "s"}
    argv = rank_process.ssh_command("node7", ["python", "t.py", "--n", "it's"], env, "/w d",
                                    ssh_port=2222, identity_file="/k/id")
    assert argv[:1] == ["ssh"] and argv[argv.index("-p") + 1] == "2222"
    assert argv[argv.index("-i") + 1] == "/k/id" and argv[-2] == "node7"
    remote = argv[-1]
    assert "topsecret" not in " ".join(argv) and "SSH_AUTH_SOCK" not in remote
    assert "HOROVOD_RANK=3" in remote and "X='a b'" in remote and "cd '/w d'" in remote
    assert remote.endswith("python t.py --n 'it'\"'\"'s'")


# ---------------------------------------------------------------- launching


def _envs(stdout):
    return [json.loads(line.split("ENV ", 1)[1]) for line in stdout.splitlines() if "ENV " in line]


@pytest.mark.parametrize("np_", [1, 2, 3])
def test_env_contract(np_):
    r = horovodrun("-np", np_, *script("env_report.py"))
    assert r.returncode == 0, r.stderr
    envs = sorted(_envs(r.stdout), key=lambda e: int(e["HOROVOD_RANK"]))
    assert [int(e["HOROVOD_RANK"]) for e in envs] == list(range(np_))
    for i, e in enumerate(envs):
        assert (e["HOROVOD_SIZE"], e["HOROVOD_LOCAL_RANK"], e["HOROVOD_LOCAL_SIZE"]) == \
            (str(np_), str(i), str(np_))
        assert (e["HOROVOD_CROSS_RANK"], e["HOROVOD_CROSS_SIZE"]) == ("0", "1")
        assert e["HOROVOD_HOSTNAME"] == "localhost" and e["HOROVOD_CONTROLLER"] == "gloo"
        assert e["HOROVOD_GLOO_RENDEZVOUS_ADDR"] == "127.0.0.1"
        assert int(e["HOROVOD_GLOO_RENDEZVOUS_PORT"]) > 0
        assert len(e["_HOROVOD_SECRET_KEY"]) == 64 and e["PYTHONUNBUFFERED"] == "1"
        assert "HOROVOD_CPU_OPERATIONS" not in e
    assert len({e["_HOROVOD_SECRET_KEY"] for e in envs}) == 1


def test_flags_reach_ranks():
    r = horovodrun("-np", 2, "--fusion-threshold-mb", 1, "--start-timeout", 9, *script("env_report.py"))
    assert r.returncode == 0, r.stderr
    for e in _envs(r.stdout):
        assert e["HOROVOD_FUSION_THRESHOLD"] == "1048576" and e["HOROVOD_START_TIMEOUT"] == "9"


def test_output_prefix_and_files(tmp_path):
    out = tmp_path / "logs"
    r = horovodrun("-np", 2, "--output-filename", out, *script("output_lines.py"))
    assert r.returncode == 0, r.stderr
    for rank in (0, 1):
        assert f"[{rank}]<stdout>:hello from {rank}\n" in r.stdout
        assert f"[{rank}]<stdout>:second line from {rank}\n" in r.stdout
        assert f"[{rank}]<stderr>:warning from {rank}\n" in r.stderr
        d = out / f"rank.{rank}"
        assert (d / "stdout").read_text() == f"hello from {rank}\nsecond line from {rank}\n"
        assert (d / "stderr").read_text() == f"warning from {rank}\n"


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # zombies are dead
    except FileNotFoundError:
        return False


def _assert_dead(pid_dir):
    """The ranks horovodrun stopped, and their children, are gone (within 3 s:
    orphans are reaped asynchronously)."""
    pids = [int(p) for f in Path(pid_dir).glob("*.pids") for p in f.read_text().split()]
    assert pids, "the surviving ranks never recorded their pids"
    deadline = time.monotonic() + 3
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in pids if _alive(p)], "processes survived horovodrun"


def test_rank_exit_code_stops_job(tmp_path):
    r = horovodrun("-np", 3, *script("fail_rank.py"), 1, "exit:3", tmp_path)
    assert r.returncode == 3 and r.elapsed < 10, (r.elapsed, r.stderr)
    assert "rank 1" in r.stderr and "exit code 3" in r.stderr
    summary = r.stderr[r.stderr.index("job failed"):]
    assert "FATAL: boom from rank 1" in summary and "noise line 9" not in summary
    _assert_dead(tmp_path)


def test_rank_sigkill_stops_job(tmp_path):
    r = horovodrun("-np", 2, *script("fail_rank.py"), 1, "sigkill", tmp_path)
    assert r.returncode != 0 and r.elapsed < 10, (r.elapsed, r.stderr)
    assert "rank 1" in r.stderr and "SIGKILL" in r.stderr
    _assert_dead(tmp_path)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_to_horovodrun_stops_ranks(tmp_path, sig):
    cmd = [sys.executable, "-m", "horovod_accel.runner.launch", "-np", "2",
           *script("fail_rank.py"), "99", "exit:1", str(tmp_path)]
    proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready = 0
        while ready < 2:
            line = proc.stdout.readline()
            assert line, "horovodrun ended before the ranks were ready"
            ready += line.endswith("<stdout>:ready\n")
        t0 = time.monotonic()
        proc.send_signal(sig)
        proc.wait(timeout=TIMEOUT)
        assert time.monotonic() - t0 < 10
    finally:
        proc.kill()
        proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 128 + sig
    _assert_dead(tmp_path)


def test_remote_rank_through_ssh(tmp_path):
    """A fake `ssh` that runs the remote command locally in an empty
    environment: the rank must get its whole env from the command line and
    the secret from stdin."""
    log = tmp_path / "ssh_args"
    fake = tmp_path / "bin" / "ssh"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$@" >> {log}\nfor last; do :; done\nexec env -i sh -c "$last"\n')
    fake.chmod(0o755)
    env = _env()
    env["PATH"] = f"{fake.parent}{os.pathsep}{env['PATH']}"
    cmd = [sys.executable, "-m", "horovod_accel.runner.launch", "-np", "2", "-p", "2222",
           "-H", "localhost:1,10.255.255.1:1", "--network-interfaces", "lo", *script("env_report.py")]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    e0, e1 = sorted(_envs(r.stdout), key=lambda e: e["HOROVOD_RANK"])
    assert e1["HOROVOD_HOSTNAME"] == "10.255.255.1" and e1["HOROVOD_RANK"] == "1"
    assert (e1["HOROVOD_CROSS_RANK"], e1["HOROVOD_CROSS_SIZE"]) == ("1", "2")
    assert e1["HOROVOD_GLOO_RENDEZVOUS_ADDR"] == "127.0.0.1" and e1["HOROVOD_GLOO_IFACE"] == "lo"
    assert e1["_HOROVOD_SECRET_KEY"] == e0["_HOROVOD_SECRET_KEY"]
    ssh_args = log.read_text()
    assert "-p 2222" in ssh_args and e0["_HOROVOD_SECRET_KEY"] not in ssh_args


def test_command_not_found():
    r = horovodrun("-np", 2, "no-such-command-hvda")
    assert r.returncode == 1 and "cannot start 'no-such-command-hvda'" in r.stderr


# ---------------------------------------------------------------- store


def test_store_between_ranks():
    r = horovodrun("-np", 2, *script("store_pair.py"))
    assert r.returncode == 0, r.stderr
    assert "[1]<stdout>:rank 1 got hello from rank 0" in r.stdout
    assert "[0]<stdout>:rank 0 got ack from rank 1" in r.stdout
    assert r.stdout.count("arrived=2") == 2


def test_store_client_ops():
    with RendezvousStoreServer("k3y") as srv, StoreClient("127.0.0.1", srv.port, "k3y", 5) as c:
        c.set("a", b"\x00\xff")
        assert c.get("a") == b"\x00\xff"
        assert c.add("n", 2) == 2 and c.add("n", 3) == 5
        assert c.delete("n") and not c.delete("n")
        with pytest.raises(StoreTimeoutError, match="'missing' was not set within 200 ms"):
            c.get("missing", timeout=0.2)
        threading.Timer(0.3, lambda: StoreClient("127.0.0.1", srv.port, "k3y").set("late", "v")).start()
        t0 = time.monotonic()
        assert c.get("late", timeout=10) == b"v" and time.monotonic() - t0 >= 0.25
        with pytest.raises(StoreError, match="not an integer"):
            c.add("a", 1)


def test_store_refuses_wrong_secret_and_reports_unreachable():
    with RendezvousStoreServer("right") as srv:
        with pytest.raises(StoreAuthError, match="refused this process: wrong job secret"):
            StoreClient("127.0.0.1", srv.port, "wrong", 5)
        port = srv.port
    with pytest.raises(StoreError, match="could not reach the horovodrun rendezvous store"):
        StoreClient("127.0.0.1", port, "right", timeout=0.3)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cpp_probe(tmp_path_factory):
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed")
    exe = tmp_path_factory.mktemp("probe") / "tcp_store_probe"
    subprocess.run([gxx, "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", f"-I{REPO / 'csrc'}",
                    str(SCRIPTS / "tcp_store_probe.cc"), str(REPO / "csrc/common/store/tcp_store.cc"),
                    str(REPO / "csrc/common/store/wire_protocol.cc"), "-o", str(exe), "-pthread"], check=True, timeout=300)
    return str(exe)


def _probe(exe, port, *cmd, secret="s3", connect_ms=5000):
    return subprocess.run([exe, "127.0.0.1", str(port), secret, str(connect_ms), *cmd],
                          capture_output=True, timeout=TIMEOUT)


def test_cpp_client_set_get(cpp_probe):
    with RendezvousStoreServer("s3") as srv, StoreClient("127.0.0.1", srv.port, "s3") as c:
        assert _probe(cpp_probe, srv.port, "set", "from-cpp", "v1").returncode == 0
        assert c.get("from-cpp") == b"v1"
        c.set("bin", b"\x00x\xff")
        assert _probe(cpp_probe, srv.port, "get", "bin", "1000").stdout == b"\x00x\xff\n"
        threading.Timer(0.4, lambda: c.set("late", "arrived")).start()
        r = _probe(cpp_probe, srv.port, "get", "late", "10000")
        assert r.returncode == 0 and r.stdout == b"arrived\n", r.stderr
        r = _probe(cpp_probe, srv.port, "get", "never", "200")
        assert r.returncode == 5 and b"'never' was not set within 200 ms" in r.stderr
        r = _probe(cpp_probe, srv.port, "cross", "x")  # Get in one thread, Set from another
        assert r.returncode == 0 and r.stdout == b"from-other-thread\n", r.stderr


def test_cpp_client_errors_and_late_server(cpp_probe):
    with RendezvousStoreServer("s3") as srv:
        r = _probe(cpp_probe, srv.port, "get", "k", "100", secret="bad")
        assert r.returncode == 3 and b"refused this process: wrong job secret" in r.stderr
    port = _free_port()
    r = _probe(cpp_probe, port, "get", "k", "100", connect_ms=300)
    assert r.returncode == 5
    assert b"could not reach the horovodrun rendezvous store" in r.stderr
    assert b"was this process started by horovodrun?" in r.stderr
    late = RendezvousStoreServer("s3", port=port)
    threading.Timer(0.5, late.start).start()
    try:
        r = _probe(cpp_probe, port, "set", "k", "v", connect_ms=10000)
        assert r.returncode == 0, r.stderr
    finally:
        time.sleep(0.6)
        late.stop()
