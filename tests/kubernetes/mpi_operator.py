"""What the Kubeflow MPI Operator gives an MPIJob's pods, as data, for the
emulation in emulated_job.py. Written from the v2beta1 controller
(kubeflow/mpi-operator pkg/controller/mpi_job_controller.go: newConfigMap,
updateDiscoverHostsInConfigMap, newWorker, newLauncherPodTemplate; the
commit in crd/README.md), for OpenMPI jobs, which is what deploy/kubernetes
ships:

- Pods: `<job>-launcher` (a batch Job's pod) and `<job>-worker-<i>` for i in
  0..replicas-1. Each pod's hostname is its name and its subdomain the
  job's headless Service, so it resolves as `<pod>.<job>.<namespace>.svc`
  (plus `.<clusterDomain>` when the operator runs with one).
- ConfigMap `<job>-config`, mounted on the launcher at /etc/mpi:
  `hostfile` (mode 0444): one `<worker DNS name> slots=<slotsPerWorker>`
  line per worker (the launcher's first with runLauncherAsWorker), and
  `discover_hosts.sh` (mode 0555): `#!/bin/sh`, then one `echo <DNS name>`
  per Running worker, sorted by pod name: no slot counts.
- Launcher env, appended to its container's: K_MPI_JOB_ROLE=launcher and,
  for OpenMPI, OMPI_MCA_orte_keep_fqdn_hostnames=true,
  OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile,
  OMPI_MCA_plm_rsh_args="-o ConnectionAttempts=10",
  OMPI_MCA_orte_set_default_slots=<slotsPerWorker>; NVIDIA_VISIBLE_DEVICES
  and NVIDIA_DRIVER_CAPABILITIES emptied unless runLauncherAsWorker.
- Workers: the container's command, or `/usr/sbin/sshd -De` if it has
  none; K_MPI_JOB_ROLE=worker. A deleted worker pod is created again under
  the same name.
"""
CONFIG_MOUNT = "/etc/mpi"
HOSTFILE = "hostfile"
DISCOVER_HOSTS = "discover_hosts.sh"


def _spec(job):
    return job["spec"]


def slots(job):
    return _spec(job).get("slotsPerWorker", 1)


def job_name(job):
    return job["metadata"]["name"]


def launcher_name(job):
    return f"{job_name(job)}-launcher"


def worker_names(job):
    n = _spec(job)["mpiReplicaSpecs"].get("Worker", {}).get("replicas", 0)
    return [f"{job_name(job)}-worker-{i}" for i in range(n)]


def dns_name(job, pod, namespace, cluster_domain=""):
    """The name other pods reach `pod` by (through the job's Service)."""
    name = f"{pod}.{job_name(job)}.{namespace}.svc"
    return f"{name}.{cluster_domain}" if cluster_domain else name


def _launcher_as_worker(job):
    return bool(_spec(job).get("runLauncherAsWorker", False))


def _require_openmpi(job):
    impl = _spec(job).get("mpiImplementation", "OpenMPI")
    if impl != "OpenMPI":
        raise ValueError(f"the emulation writes what the operator writes for OpenMPI jobs, "
                         f"not {impl}")


def hostfile(job, namespace, cluster_domain=""):
    """The text of /etc/mpi/hostfile."""
    _require_openmpi(job)
    pods = ([launcher_name(job)] if _launcher_as_worker(job) else []) + worker_names(job)
    return "".join(f"{dns_name(job, p, namespace, cluster_domain)} slots={slots(job)}\n"
                   for p in pods)


def discover_hosts(job, namespace, running_workers, cluster_domain=""):
    """The text of /etc/mpi/discover_hosts.sh while `running_workers` (pod
    names) are the Running worker pods."""
    lines = ["#!/bin/sh\n"]
    if _launcher_as_worker(job):
        lines.append(f"echo {dns_name(job, launcher_name(job), namespace, cluster_domain)}\n")
    lines += [f"echo {dns_name(job, p, namespace, cluster_domain)}\n"
              for p in sorted(running_workers)]
    return "".join(lines)


def launcher_env(job):
    """The variables the operator appends to the launcher container's env."""
    _require_openmpi(job)
    env = {
        "K_MPI_JOB_ROLE": "launcher",
        "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
        "OMPI_MCA_orte_default_hostfile": f"{CONFIG_MOUNT}/{HOSTFILE}",
        "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10",
        "OMPI_MCA_orte_set_default_slots": str(slots(job)),
    }
    if not _launcher_as_worker(job):
        env.update({"NVIDIA_VISIBLE_DEVICES": "", "NVIDIA_DRIVER_CAPABILITIES": ""})
    return env
