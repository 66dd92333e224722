"""Offline validation of rendered objects against the schemas a cluster
applies to them. Each check returns a list of messages "<where>: <what>";
an empty list means valid.

- An MPIJob (kubeflow.org/v2beta1) is checked against the MPI Operator's
  own CRD (crd/kubeflow.org_mpijobs.yaml; crd/README.md says where it comes
  from), as the API server checks a custom resource that `kubectl apply`
  sends with its default strict field validation: types, enums, required
  fields, list-maps with unique keys, and no unknown fields (an object
  schema that lists `properties` admits no other field unless it says
  x-kubernetes-preserve-unknown-fields). Then by operator_errors(): the
  checks the operator itself makes and the schema cannot express.
- Each pod template inside an MPIJob, checked as a v1 PodTemplate, and any
  other object: kubernetes-validate's schemas of Kubernetes K8S_VERSION,
  strict (unknown fields are errors).
"""
import copy
import functools
import re
from pathlib import Path

import jsonschema
import yaml

CRD_FILE = Path(__file__).resolve().parent / "crd" / "kubeflow.org_mpijobs.yaml"
MPIJOB_VERSION = "v2beta1"
# The newest Kubernetes whose schemas kubernetes-validate (pinned in
# scripts/setup_kubernetes.sh) ships.
K8S_VERSION = "1.37.0"
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def _where(path):
    return "/".join(str(p) for p in path) or "(root)"


# ---------------------------------------------------------------- the CRD
def _strict(schema):
    """A copy of an OpenAPI v3 structural schema in which objects with
    `properties` reject unknown fields, as strict field validation does."""
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _strict(v) for k, v in schema.items()}
    if ("properties" in out and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


def _list_type(validator, list_type, instance, schema):
    """x-kubernetes-list-type: 'map' items are unique by their
    x-kubernetes-list-map-keys (a missing key counts as its default), 'set'
    items are unique; 'atomic' allows anything."""
    if not validator.is_type(instance, "array") or list_type not in ("map", "set"):
        return
    if list_type == "set":
        keys = [yaml.safe_dump(item, sort_keys=True) for item in instance]
        what = "items"
    else:
        names = schema.get("x-kubernetes-list-map-keys", [])
        props = schema.get("items", {}).get("properties", {})
        keys = [tuple(item.get(k, props.get(k, {}).get("default")) for k in names)
                if isinstance(item, dict) else item for item in instance]
        what = f"keys {names}"
    dups = sorted({str(k) for k in keys if keys.count(k) > 1})
    if dups:
        yield jsonschema.ValidationError(f"duplicate {what} {', '.join(dups)} in a list-map")


_Validator = jsonschema.validators.extend(jsonschema.Draft7Validator,
                                          {"x-kubernetes-list-type": _list_type})


@functools.lru_cache(maxsize=None)
def crd():
    with open(CRD_FILE) as f:
        return yaml.load(f, Loader=yaml.CSafeLoader)


@functools.lru_cache(maxsize=None)
def _mpijob_validator():
    doc = crd()
    versions = {v["name"]: v for v in doc["spec"]["versions"]}
    if MPIJOB_VERSION not in versions:
        raise RuntimeError(f"{CRD_FILE} has no {MPIJOB_VERSION} (only {sorted(versions)})")
    schema = _strict(versions[MPIJOB_VERSION]["schema"]["openAPIV3Schema"])
    return _Validator(schema)


def crd_errors(obj):
    """Violations of the CRD's v2beta1 schema by an MPIJob."""
    name = obj.get("metadata", {}).get("name", "?")
    want = f"kubeflow.org/{MPIJOB_VERSION}"
    errs = [] if obj.get("apiVersion") == want else [
        f"MPIJob/{name}: apiVersion is {obj.get('apiVersion')!r}, the CRD serves {want!r}"]
    errs += [f"MPIJob/{name} {_where(e.absolute_path)}: {e.message}"
             for e in sorted(_mpijob_validator().iter_errors(obj), key=lambda e: list(e.path))]
    return errs


# ------------------------------------------------- the operator's own checks
# Written from kubeflow/mpi-operator's pkg/apis/kubeflow/v2beta1/default.go
# and pkg/apis/kubeflow/validation/validation.go (the commit in crd/README.md):
# the operator fills in defaults, then refuses a job that breaks these rules.
_CLEAN_POD_POLICIES = {"None", "Running", "All"}
_MPI_IMPLEMENTATIONS = {"OpenMPI", "Intel", "MPICH"}
_RESTART_POLICIES = {"Never", "OnFailure"}
_MANAGED_BY = {"kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue"}


def operator_errors(job):
    """What the MPI Operator would refuse in an MPIJob (after its defaults);
    the job must already match the CRD (crd_errors() empty)."""
    name = job.get("metadata", {}).get("name", "")
    spec = job.get("spec", {})
    errs = []
    specs = spec.get("mpiReplicaSpecs")
    if not specs:
        return [f"MPIJob/{name} spec/mpiReplicaSpecs: required"]
    workers = specs.get("Worker")
    n_workers = (workers or {}).get("replicas", 0)
    last = f"{name}-worker-{max(n_workers, 1) - 1}"
    if len(last) > 63 or not _DNS1035.match(last):
        errs.append(f"MPIJob/{name} metadata/name: pod host name {last!r} is not a DNS-1035 label "
                    "(lower-case letters, digits and '-', starting with a letter, 63 at most)")
    if spec.get("slotsPerWorker", 1) < 0:
        errs.append(f"MPIJob/{name} spec/slotsPerWorker: must not be negative")
    if spec.get("mpiImplementation", "OpenMPI") not in _MPI_IMPLEMENTATIONS:
        errs.append(f"MPIJob/{name} spec/mpiImplementation: one of {sorted(_MPI_IMPLEMENTATIONS)}")
    if spec.get("sshAuthMountPath", "/root/.ssh") == "":
        errs.append(f"MPIJob/{name} spec/sshAuthMountPath: must not be empty")
    policy = spec.get("runPolicy", {})
    if policy.get("cleanPodPolicy", "None") not in _CLEAN_POD_POLICIES:
        errs.append(f"MPIJob/{name} spec/runPolicy/cleanPodPolicy: one of "
                    f"{sorted(_CLEAN_POD_POLICIES)}")
    for field in ("ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit"):
        if policy.get(field, 0) < 0:
            errs.append(f"MPIJob/{name} spec/runPolicy/{field}: must not be negative")
    if "managedBy" in policy and policy["managedBy"] not in _MANAGED_BY:
        errs.append(f"MPIJob/{name} spec/runPolicy/managedBy: one of {sorted(_MANAGED_BY)}")
    defaults = {"Launcher": (1, "OnFailure"), "Worker": (0, "Never")}
    if "Launcher" not in specs:
        errs.append(f"MPIJob/{name} spec/mpiReplicaSpecs/Launcher: required")
    for kind, rs in specs.items():
        where = f"MPIJob/{name} spec/mpiReplicaSpecs/{kind}"
        replicas, restart = defaults.get(kind, (None, None))
        replicas = rs.get("replicas", replicas)
        if replicas is None:
            errs.append(f"{where}/replicas: required")
        elif kind == "Launcher" and replicas != 1:
            errs.append(f"{where}/replicas: must be 1")
        elif kind == "Worker" and replicas < 1:
            errs.append(f"{where}/replicas: must be at least 1")
        if rs.get("restartPolicy", restart) not in _RESTART_POLICIES:
            errs.append(f"{where}/restartPolicy: one of {sorted(_RESTART_POLICIES)}")
        if not rs.get("template", {}).get("spec", {}).get("containers"):
            errs.append(f"{where}/template/spec/containers: at least one container")
    return errs


# ------------------------------------------------------- built-in kinds
def builtin_errors(obj, where=None):
    """Violations of Kubernetes K8S_VERSION's schema for obj's kind, strict."""
    import kubernetes_validate  # noqa: PLC0415 (a test dependency: setup_kubernetes.sh)
    where = where or f"{obj.get('kind')}/{obj.get('metadata', {}).get('name', '?')}"
    try:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    except kubernetes_validate.SchemaNotFoundError as e:
        return [f"{where}: {e.message}"]
    except kubernetes_validate.ValidationError as e:
        return [f"{where} {_where(e.absolute_path)}: {e.message}"]
    return []


def pod_template_errors(job):
    """Each replica's pod template, checked as a v1 PodTemplate."""
    name = job.get("metadata", {}).get("name", "?")
    errs = []
    for kind, rs in job.get("spec", {}).get("mpiReplicaSpecs", {}).items():
        obj = {"apiVersion": "v1", "kind": "PodTemplate",
               "metadata": {"name": f"{name}-{kind.lower()}"},
               "template": copy.deepcopy(rs.get("template", {}))}
        errs += builtin_errors(obj, f"MPIJob/{name} spec/mpiReplicaSpecs/{kind}/template as "
                                    f"a v1 PodTemplate:")
    return errs


def errors(obj):
    """Every violation found in one rendered object, whatever its kind."""
    if obj.get("kind") == "MPIJob" and obj.get("apiVersion", "").startswith("kubeflow.org/"):
        errs = crd_errors(obj)
        # The operator checks typed objects: only one the API server accepted.
        return (errs or operator_errors(obj)) + pod_template_errors(obj)
    return builtin_errors(obj)
