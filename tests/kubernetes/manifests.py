"""The shipped Kubernetes manifests, rendered as a user renders them:
`kubectl kustomize deploy/kubernetes/overlays/<accelerator>/<launch>`
(offline; the overlays use kustomize v5 Components, so kubectl 1.27 or newer).

find_kubectl() picks the kubectl next to this Python first (scripts/
setup_kubernetes.sh installs the pinned one into the venv), then one on PATH
whose kustomize is v5 or newer. render() caches: every overlay is rendered
once per test session. Nothing here needs a cluster.
"""
import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy" / "kubernetes"
ACCELERATORS = ("cpu", "cuda", "gcu")
LAUNCHES = ("static-mpirun", "static-horovodrun", "elastic")
OVERLAYS = [(a, launch) for a in ACCELERATORS for launch in LAUNCHES]
MPIJOB_API = "kubeflow.org/v2beta1"
RENDER_TIMEOUT_S = 60


class RenderError(RuntimeError):
    """kubectl kustomize failed; the message has its stderr."""


def _kustomize_major(kubectl):
    try:
        r = subprocess.run([kubectl, "version", "--client"], capture_output=True, text=True,
                           timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"Kustomize Version: v(\d+)", r.stdout)
    return int(m.group(1)) if m else None


@functools.lru_cache(maxsize=None)
def find_kubectl():
    """(path, None) of a kubectl with kustomize v5+, or (None, why not)."""
    candidates = [Path(sys.executable).parent / "kubectl", shutil.which("kubectl")]
    seen = []
    for c in candidates:
        if c is None or not os.access(c, os.X_OK):
            continue
        major = _kustomize_major(str(c))
        if major is not None and major >= 5:
            return str(c), None
        seen.append(f"{c} (kustomize v{major})" if major else str(c))
    found = f"; found only {', '.join(seen)}" if seen else ""
    return None, ("no kubectl with kustomize v5 or newer (kubectl 1.27+)" + found +
                  "; run scripts/setup_kubernetes.sh")


def overlay_dir(accelerator, launch):
    return DEPLOY / "overlays" / accelerator / launch


@functools.lru_cache(maxsize=None)
def _render_text(path):
    kubectl, why = find_kubectl()
    if kubectl is None:
        raise RenderError(why)
    r = subprocess.run([kubectl, "kustomize", path], capture_output=True, text=True,
                       timeout=RENDER_TIMEOUT_S)
    if r.returncode != 0:
        raise RenderError(f"kubectl kustomize {path} failed ({r.returncode}):\n{r.stderr}")
    return r.stdout, r.stderr


def render_path(path):
    """The objects `kubectl kustomize path` prints (fresh copies)."""
    text, _ = _render_text(str(path))
    return [o for o in yaml.load_all(text, Loader=yaml.CSafeLoader) if o is not None]


def render(accelerator, launch):
    return render_path(overlay_dir(accelerator, launch))


def render_warnings(accelerator, launch):
    """What kubectl kustomize printed on stderr for the overlay (deprecations)."""
    return _render_text(str(overlay_dir(accelerator, launch)))[1]


def the_mpijob(objects):
    """The one MPIJob among rendered objects (AssertionError otherwise)."""
    jobs = [o for o in objects if o.get("kind") == "MPIJob"]
    assert len(jobs) == 1, f"expected one MPIJob, got {[o.get('kind') for o in objects]}"
    return jobs[0]


def replica(job, kind):
    return job["spec"]["mpiReplicaSpecs"][kind]


def container(job, kind):
    """The main container (the operator uses the first) of Launcher or Worker."""
    return replica(job, kind)["template"]["spec"]["containers"][0]


def launcher_argv(job):
    """The launcher's command line: command + args, as the container runs it."""
    c = container(job, "Launcher")
    return list(c.get("command", [])) + list(c.get("args", []))


def env_of(c):
    """{name: value} of a container's env (valueFrom entries: None)."""
    return {e["name"]: e.get("value") for e in c.get("env", [])}


def option(argv, name, count=1):
    """The value(s) after the first `name` in argv (None if absent): a str
    for count=1, else a list of `count` strings."""
    if name not in argv:
        return None
    i = argv.index(name)
    vals = argv[i + 1:i + 1 + count]
    return vals[0] if count == 1 else vals


def forwarded_by_mpirun(argv):
    """Names that `-x NAME` (or `-x NAME=VALUE`) passes to mpirun's ranks."""
    return {argv[i + 1].split("=", 1)[0] for i, a in enumerate(argv[:-1]) if a == "-x"}
