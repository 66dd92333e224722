"""Kubernetes (issue 28): what a cluster user deploys, tested without a
cluster (docs/kubernetes.md).

- Every overlay of deploy/kubernetes renders offline (`kubectl kustomize`)
  and every rendered object matches its real schema: the MPIJob the MPI
  Operator's v2beta1 CRD and the operator's own checks, its pod templates
  Kubernetes' (tests/kubernetes/schemas.py). The validators are shown to
  reject broken objects too.
- The job's shape holds together: -np, slots, devices per pod, the
  horovodrun flags (parsed by horovodrun's own parser), what mpirun
  forwards, the image tags.
- The images' contract, read from docker/ (no Docker engine here): non-root
  user, sshd and ssh settings matching the manifests, run.sh where the
  launcher's `bash run.sh` expects it; run.sh itself is run; hadolint.
- The operator's launch contract, emulated with network namespaces as pods
  (tests/kubernetes/emulated_job.py): the rendered launcher command runs
  unchanged and trains at 2 pods x 2 slots (mpirun and horovodrun), and the
  elastic job survives a worker pod killed and recreated under its name.
  These need root and iproute2, and skip with the reason otherwise.
Every job runs under a hard timeout.
"""
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from launch_util import REPO

sys.path.insert(0, str(REPO / "tests" / "kubernetes"))
sys.path.insert(0, str(REPO / "tests" / "multihost"))
import dockerfiles  # noqa: E402
import manifests  # noqa: E402
import mpi_operator  # noqa: E402
import netns_hosts  # noqa: E402

OVERLAYS = manifests.OVERLAYS
DOCKER = REPO / "docker"
DEVICE_RESOURCE = {"cuda": "nvidia.com/gpu", "gcu": "enflame.com/gcu"}
GPU_OPERATIONS = {"cuda": {"NCCL"}, "gcu": {"ECCL", "NCCL"}}
PLUGIN_WHEEL = {"cuda": "horovod_accel_cuda", "gcu": "horovod_accel_gcu"}

_KUBECTL, _NO_KUBECTL = manifests.find_kubectl()
needs_kubectl = pytest.mark.skipif(_KUBECTL is None, reason=_NO_KUBECTL or "")


def job_of(accelerator, launch):
    return manifests.the_mpijob(manifests.render(accelerator, launch))


def schemas():
    """tests/kubernetes/schemas.py, once kubernetes-validate is importable."""
    pytest.importorskip("kubernetes_validate",
                        reason="kubernetes-validate is not installed (scripts/setup_kubernetes.sh)")
    import schemas as mod  # noqa: PLC0415
    return mod


# ------------------------------------------------------------ render + schemas
@needs_kubectl
@pytest.mark.parametrize("accelerator,launch", OVERLAYS)
def test_overlay_renders_one_valid_mpijob(accelerator, launch):
    objects = manifests.render(accelerator, launch)
    assert [(o["apiVersion"], o["kind"]) for o in objects] == [(manifests.MPIJOB_API, "MPIJob")]
    errors = [e for o in objects for e in schemas().errors(o)]
    assert not errors, "\n".join(errors)
    # No deprecated kustomize fields (kustomize warns on stderr).
    assert manifests.render_warnings(accelerator, launch).strip() == ""


@needs_kubectl
def test_validators_reject_what_a_cluster_rejects():
    """Each check sees real mistakes: an unknown (misspelt) field, a wrong
    type, a value outside an enum, a duplicate env name (list-map), a pod
    template field Kubernetes does not know, and the operator's rules."""
    s = schemas()
    job = job_of("cuda", "elastic")

    def broken(edit):
        j = copy.deepcopy(job)
        edit(j)
        return "\n".join(s.errors(j))

    launcher = ("spec", "mpiReplicaSpecs", "Launcher", "template", "spec", "containers", 0)

    def at(j, path):
        for p in path:
            j = j[p]
        return j

    cases = [
        (lambda j: j["spec"].update(slotPerWorker=2), r"'slotPerWorker' was unexpected"),
        (lambda j: j["spec"]["mpiReplicaSpecs"]["Worker"].update(replicas="2"),
         r"Worker/replicas: '2' is not of type 'integer'"),
        (lambda j: j["spec"].update(mpiImplementation="LAM"), r"'LAM' is not one of"),
        (lambda j: at(j, launcher)["env"].append({"name": "TRAIN_SCRIPT", "value": "x"}),
         r"duplicate keys \['name'\] \('TRAIN_SCRIPT',\)"),
        (lambda j: at(j, launcher).update(resourcez={}),
         r"as a v1 PodTemplate: template/spec/containers/0: .*'resourcez' was unexpected"),
        (lambda j: j["spec"]["mpiReplicaSpecs"]["Worker"].update(restartPolicy="Always"),
         r"Worker/restartPolicy: one of \['Never', 'OnFailure'\]"),
        (lambda j: j["metadata"].update(name="Horovod"), r"not a DNS-1035 label"),
        (lambda j: j["spec"]["mpiReplicaSpecs"]["Launcher"].update(replicas=2),
         r"Launcher/replicas: must be 1"),
    ]
    for edit, want in cases:
        got = broken(edit)
        assert re.search(want, got), f"expected /{want}/ among the errors, got:\n{got}"
    assert s.errors(job) == []


# ------------------------------------------------------------ the job's shape
def _slots_and_workers(job):
    return job["spec"]["slotsPerWorker"], job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]


@needs_kubectl
@pytest.mark.parametrize("accelerator,launch", OVERLAYS)
def test_job_shape_holds_together(accelerator, launch):
    job = job_of(accelerator, launch)
    slots, workers = _slots_and_workers(job)
    launcher, worker = (manifests.container(job, k) for k in ("Launcher", "Worker"))
    # One image, the accelerator's, in both pods, started in its WORKDIR.
    assert {launcher["image"], worker["image"]} == {f"horovod_accel:{accelerator}"}
    assert launcher["workingDir"] == worker["workingDir"] == "/workspace"
    # Devices: one per slot in a worker pod, none in the launcher pod.
    limits = worker["resources"]["limits"]
    if accelerator == "cpu":
        assert int(limits["cpu"]) >= slots, limits
    else:
        assert limits[DEVICE_RESOURCE[accelerator]] == slots, limits
        assert DEVICE_RESOURCE[accelerator] not in launcher.get("resources", {}).get("limits", {})
    env = manifests.env_of(launcher)
    if accelerator in GPU_OPERATIONS:
        assert env.get("HOROVOD_GPU_OPERATIONS") in GPU_OPERATIONS[accelerator], env
    else:
        assert "HOROVOD_GPU_OPERATIONS" not in env, env
    script = env["TRAIN_SCRIPT"]
    assert (REPO / script).is_file(), f"TRAIN_SCRIPT {script} is not in the image's /workspace"

    argv = manifests.launcher_argv(job)
    if argv[0] == "mpirun":
        assert launch == "static-mpirun"
        assert manifests.option(argv, "-np") == str(slots * workers), argv
        # No host list: Open MPI reads the operator's OMPI_MCA_orte_default_hostfile.
        assert not {"-H", "--host", "--hostfile", "-hostfile"} & set(argv), argv
        missing = set(env) - manifests.forwarded_by_mpirun(argv)
        assert not missing, f"mpirun does not pass {sorted(missing)} to the ranks (-x NAME)"
    else:
        from horovod_accel.runner import args as hvd_args  # noqa: PLC0415
        assert argv[0] == "horovodrun", argv
        a = hvd_args.parse_args(argv[1:])  # horovodrun's own parser: exits on a bad flag
        assert a.command == ["bash", "run.sh"], a.command
        if launch == "static-horovodrun":
            assert a.hostfile == f"{mpi_operator.CONFIG_MOUNT}/{mpi_operator.HOSTFILE}"
            assert a.num_proc == slots * workers
        else:
            assert a.elastic and a.host_discovery_script == \
                f"{mpi_operator.CONFIG_MOUNT}/{mpi_operator.DISCOVER_HOSTS}"
            # The operator's script prints no slots: --slots-per-host gives them.
            assert a.slots == slots
            assert a.min_num_proc <= a.num_proc <= slots * workers <= a.max_num_proc
            # The operator recreates a lost pod under its name: it must be usable again.
            assert a.cooldown_range is not None


@needs_kubectl
@pytest.mark.parametrize("launch", manifests.LAUNCHES)
def test_launch_command_is_the_same_on_every_accelerator(launch):
    """Accelerators change the image and the devices, not how the job
    starts (beyond forwarding their settings), so the CPU emulation below
    covers the launcher command of every overlay."""
    def without_forwarding(argv):
        out, skip = [], False
        for a in argv:
            if skip:
                skip = False
            elif a == "-x":
                skip = True
            else:
                out.append(a)
        return out
    argvs = {a: without_forwarding(manifests.launcher_argv(job_of(a, launch)))
             for a in manifests.ACCELERATORS}
    assert len({tuple(v) for v in argvs.values()}) == 1, argvs


# ------------------------------------------------------------ the images
@pytest.fixture(scope="module")
def images():
    return {a: dockerfiles.parse(DOCKER / f"Dockerfile.{a}") for a in manifests.ACCELERATORS}


def _sshd_config():
    conf = {}
    for line in (DOCKER / "mpi" / "sshd_config").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, value = line.split(None, 1)
            conf[key] = value.strip()
    return conf


@pytest.mark.parametrize("accelerator", manifests.ACCELERATORS)
def test_image_meets_the_mpi_operator_contract(images, accelerator):
    runtime = images[accelerator][-1]
    # MPI: mpirun and ssh/sshd at run time (the wheel brings the MPI shims).
    assert {"openmpi-bin", "openssh-client", "openssh-server"} <= runtime.apt_packages()
    # The release wheels from dist/ (scripts/build_wheels.sh): the core, and
    # the accelerator's own plugin only.
    wheels = [src for srcs, dst, _ in runtime.copies() if dst == "/tmp/wheels/" for src in srcs]
    assert "dist/horovod_accel-*.whl" in wheels, wheels
    for device, wheel in PLUGIN_WHEEL.items():
        copied = f"dist/{wheel}-*.whl" in wheels
        installed = any(wheel in r for r in runtime.args("RUN"))
        assert copied == installed == (device == accelerator), f"{wheel} in the {accelerator} image"
    # Non-root: the uid the manifests run the pods as.
    job = job_of(accelerator, "static-mpirun") if _KUBECTL else None
    assert runtime.last("USER") == "1000:1000"
    if job is not None:
        for kind in ("Launcher", "Worker"):
            sc = manifests.replica(job, kind)["template"]["spec"]["securityContext"]
            assert (sc["runAsUser"], sc["runAsGroup"], sc["runAsNonRoot"]) == (1000, 1000, True)
    copies = {dst: (srcs, flags) for srcs, dst, flags in runtime.copies()}
    assert copies["/tmp/add_mpiuser.sh"][0] == ["docker/mpi/add_mpiuser.sh"]
    assert "sh /tmp/add_mpiuser.sh && rm /tmp/add_mpiuser.sh" in runtime.args("RUN")
    # sshd as mpiuser: the worker command's config file, owned by mpiuser.
    srcs, flags = copies["/home/mpiuser/.sshd_config"]
    assert srcs == ["docker/mpi/sshd_config"] and flags["--chown"].startswith("mpiuser")
    srcs, _ = copies["/etc/ssh/ssh_config.d/mpi-operator.conf"]
    assert srcs == ["docker/mpi/ssh_config"]
    # run.sh where `bash run.sh` runs: the WORKDIR, with run.env and examples.
    assert runtime.last("WORKDIR") == "/workspace"
    assert copies["./"][0] == ["docker/run.sh", "docker/run.env"]
    assert copies["examples"][0] == ["examples"]
    # run.env's PATH is the image's Python.
    assert "/opt/venv/bin" in (DOCKER / "run.env").read_text()
    assert any(r.startswith("python") and "-m venv" in r and "/opt/venv" in r
               for r in runtime.args("RUN")), runtime.args("RUN")
    assert any("PATH=/opt/venv/bin:$PATH" in e for e in runtime.args("ENV"))


@needs_kubectl
def test_ssh_settings_match_the_manifests():
    """The worker's sshd (docker/mpi/sshd_config), the launcher's ssh client
    (docker/mpi/ssh_config, read by the real ssh -G) and the MPIJob agree
    on the port, the key pair's place and the config file's path."""
    job = job_of("cpu", "static-horovodrun")
    worker = manifests.container(job, "Worker")
    sshd = _sshd_config()
    port = int(sshd["Port"])
    assert worker["ports"] == [{"name": "ssh", "containerPort": port}]
    assert worker["readinessProbe"]["tcpSocket"]["port"] == port
    assert worker["command"] == ["/usr/sbin/sshd", "-De", "-f", "/home/mpiuser/.sshd_config"]
    ssh_dir = job["spec"]["sshAuthMountPath"]
    assert ssh_dir == "/home/mpiuser/.ssh"
    # The operator mounts id_rsa, id_rsa.pub, authorized_keys there (root's, 0644).
    assert sshd["HostKey"] == f"{ssh_dir}/id_rsa"
    assert sshd["AuthorizedKeysFile"] == f"{ssh_dir}/authorized_keys"
    assert sshd["StrictModes"] == "no" and sshd["UsePAM"] == "no"
    assert sshd["PidFile"].startswith("/home/mpiuser/")  # writable by mpiuser
    ssh = shutil.which("ssh")
    if ssh is None:
        pytest.skip("no ssh client here to read docker/mpi/ssh_config")
    r = subprocess.run([ssh, "-G", "-F", str(DOCKER / "mpi" / "ssh_config"),
                        mpi_operator.dns_name(job, "w-0", "default")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    client = dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)
    assert client["port"] == str(port)
    assert client["stricthostkeychecking"] == "false"
    assert client["userknownhostsfile"] == "/dev/null"


def test_run_sh_runs_the_training_script_like_a_rank(tmp_path):
    """docker/run.sh as a rank started through sshd runs it: a bare login
    environment, run.env next to it supplying PATH, TRAIN_SCRIPT relative
    to its folder or absolute, arguments passed on, the script's exit
    status returned, a missing script named."""
    ws = tmp_path / "workspace"
    (ws / "bin").mkdir(parents=True)
    (ws / "run.sh").symlink_to(DOCKER / "run.sh")
    (ws / "bin" / "python3").symlink_to(shutil.which("python3") or sys.executable)
    (ws / "run.env").write_text(f'PATH="{ws / "bin"}:$PATH"\nexport PATH\nFROM_RUN_ENV=1\n'
                                "export FROM_RUN_ENV\n")
    (ws / "train.py").write_text(
        "import json, os, sys\n"
        "print(json.dumps({'argv': sys.argv[1:], 'cwd': os.getcwd(), 'env': {k: os.environ.get(k)"
        " for k in ('FROM_RUN_ENV', 'OMP_NUM_THREADS', 'PYTHONUNBUFFERED')}}))\n"
        "sys.exit(int(os.environ.get('EXIT', '0')))\n")
    login = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}

    def run_sh(*args, **env):
        return subprocess.run(["/bin/bash", "run.sh", *args], cwd=ws, env={**login, **env},
                              capture_output=True, text=True, timeout=60)

    r = run_sh("a", "b c", TRAIN_SCRIPT="train.py")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got == {"argv": ["a", "b c"], "cwd": str(ws),
                   "env": {"FROM_RUN_ENV": "1", "OMP_NUM_THREADS": None, "PYTHONUNBUFFERED": "1"}}
    r = run_sh(TRAIN_SCRIPT=str(ws / "train.py"), EXIT="7", OMP_NUM_THREADS="3")
    assert r.returncode == 7 and json.loads(r.stdout)["env"]["OMP_NUM_THREADS"] == "3"
    r = run_sh(TRAIN_SCRIPT="nope.py")
    assert r.returncode == 2 and "TRAIN_SCRIPT" in r.stderr and "nope.py" in r.stderr, r.stderr
    # The default is the example the manifests name, relative to /workspace.
    assert "examples/pytorch/pytorch_synthetic_mlp.py" in (DOCKER / "run.sh").read_text()


def test_dockerfiles_pass_hadolint():
    r = subprocess.run(["bash", str(REPO / "scripts" / "lint_docker.sh")], capture_output=True,
                       text=True, timeout=600, env={**os.environ, "HADOLINT_VENV": sys.prefix})
    assert r.returncode == 0, f"hadolint found problems:\n{r.stdout}\n{r.stderr}"
    for a in manifests.ACCELERATORS:
        assert f"ok: docker/Dockerfile.{a}" in r.stdout, r.stdout


# ------------------------------------------------------------ the emulated operator
_NO_NETNS = netns_hosts.unavailable_reason()
needs_netns = pytest.mark.skipif(_NO_NETNS is not None,
                                 reason=f"no network namespaces for the pods: {_NO_NETNS}")


def _emulated(job, **extra_env):
    import emulated_job  # noqa: PLC0415
    return emulated_job.EmulatedMPIJob(job, extra_env=extra_env)


@needs_kubectl
@needs_netns
@pytest.mark.parametrize("launch", ["static-mpirun", "static-horovodrun"])
def test_static_mpijob_trains_with_its_rendered_command(launch):
    """2 worker pods x 2 slots: the launcher command of the rendered cpu
    overlay, unchanged, trains examples/pytorch/pytorch_synthetic_mlp.py
    (its default TRAIN_SCRIPT); 2 ranks ran in each worker pod, none in the
    launcher's."""
    job = job_of("cpu", launch)
    with _emulated(job) as emu:
        run = emu.start()
        rc = run.wait(timeout=300)
        pods = emu.rank_pods()
    assert rc == 0, run.tail()
    assert re.search(r"loss fell from [0-9.]+ to [0-9.]+", run.output), run.tail()
    assert re.search(r"epoch 5/5: .*\(4 processes\)", run.output), run.tail()
    assert sorted(pods) == sorted(mpi_operator.worker_names(job) * 2), pods


@needs_kubectl
@needs_netns
def test_elastic_mpijob_survives_a_worker_pod_recreated_under_its_name():
    """The elastic overlay's launcher command, unchanged, over 2 worker
    pods x 2 slots: once training runs at 4 ranks, worker pod 1 is killed
    (every process in it) and leaves discover_hosts.sh; the job goes on
    with 2 ranks. The operator then recreates the pod under the same name
    (a new address): after its blacklist cooldown horovodrun uses it again
    and the job is back at 4 ranks, then finishes with a lower loss."""
    job = job_of("cpu", "elastic")
    lost = mpi_operator.worker_names(job)[1]
    lost_dns = mpi_operator.dns_name(job, lost, "default")
    with tempfile.TemporaryDirectory() as tmp:
        stop = Path(tmp) / "stop"
        with _emulated(job, TRAIN_SCRIPT=REPO / "tests" / "kubernetes" / "elastic_train.py",
                       ELASTIC_STOP_FILE=stop) as emu:
            run = emu.start()
            i, _ = run.wait_for(r"epoch ([2-9]|\d\d+): 4 workers", timeout=240)
            emu.delete_worker(lost)
            i, _ = run.wait_for(r"epoch \d+: 2 workers", timeout=180, start=i)
            emu.recreate_worker(lost)
            i, _ = run.wait_for(r"epoch \d+: 4 workers", timeout=180, start=i)
            stop.touch()
            rc = run.wait(timeout=120)
    out = run.output
    assert rc == 0, run.tail()
    assert re.search(rf"host {re.escape(lost_dns)} is blacklisted for \d+ s", out), run.tail()
    m = re.search(r"final: 4 workers, loss ([0-9.]+) -> ([0-9.]+)", out)
    assert m and float(m.group(2)) < float(m.group(1)), run.tail()
