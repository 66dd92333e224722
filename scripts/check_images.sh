#!/usr/bin/env bash
# Runs real jobs in the images scripts/build_images.sh built (podman):
#   cpu   the seed guide's launch across two containers as the Kubeflow MPI
#         Operator runs it: a launcher and a worker on a podman network with
#         addresses assigned here, the job's ssh key pair mounted at
#         /home/mpiuser/.ssh in both, the worker running
#         `sshd -De -f /home/mpiuser/.sshd_config` (port 2222) as mpiuser, and
#         the launcher, as mpiuser,
#           mpirun -np 2 --bind-to numa --hostfile <launcher:1, worker:1> bash run.sh
#         (the launcher also runs a rank: the operator's runLauncherAsWorker).
#         run.sh trains examples/pytorch/pytorch_synthetic_mlp.py; its final
#         loss and accuracy must equal those of the same example run on this
#         host with horovodrun -np 2.
#   gcu   horovodrun -np 2 ... pytorch_synthetic_mlp.py --device gcu inside the
#         image: training on the (emulated) GCU through the gcu plugin.
#   cuda  the conformance suite (python -m horovod_accel.conformance) at
#         np 2 in plugin memory on the cuda plugin (emulated CUDA + NCCL).
# Every step has a timeout; containers and the network are removed at exit.
#
# Usage: scripts/check_images.sh [cpu] [gcu] [cuda]     (default: all three)
# Env:   HVDA_IMAGE_PREFIX (default horovod_accel), HVDA_IMAGE_SUBNET
#        (default 10.89.78.0/24, for the cpu job's network)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$ROOT/docker/podman/containers.conf}"
PREFIX="${HVDA_IMAGE_PREFIX:-horovod_accel}"
SUBNET="${HVDA_IMAGE_SUBNET:-10.89.78.0/24}"
NET_PREFIX="${SUBNET%.*}"
IMAGES=("$@")
[ ${#IMAGES[@]} -gt 0 ] || IMAGES=(cpu gcu cuda)
WORK="$(mktemp -d)"
ID="hvda-check-$$"
cleanup() {
  podman rm -f -t 0 "$ID-launcher" "$ID-worker" >/dev/null 2>&1 || true
  podman network rm -f "$ID" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
PY="${PYTHON:-$ROOT/.venv/bin/python}"

# Every epoch's "loss L accuracy A" in a log of the MLP example, one line.
epochs() { grep -oE 'epoch [0-9]+/[0-9]+: loss [0-9.]+ accuracy [0-9.]+' "$1" | cut -d' ' -f3- | paste -sd';'; }

check_cpu() {
  local image="$PREFIX:cpu"
  echo "==> cpu: the MLP example on this host (horovodrun -np 2), for reference"
  timeout 300 "$ROOT/.venv/bin/horovodrun" -np 2 "$PY" examples/pytorch/pytorch_synthetic_mlp.py \
    >"$WORK/host.log" 2>&1 || { cat "$WORK/host.log" >&2; echo "check_images: the host run failed" >&2; return 1; }
  local want; want="$(epochs "$WORK/host.log")"
  echo "    host: $want"

  echo "==> cpu: launcher + worker containers on $SUBNET, ssh on 2222 as mpiuser"
  mkdir -p "$WORK/ssh"
  ssh-keygen -q -t rsa -b 3072 -N "" -f "$WORK/ssh/id_rsa"
  cp "$WORK/ssh/id_rsa.pub" "$WORK/ssh/authorized_keys"
  chown -R 1000:1000 "$WORK/ssh"
  printf 'launcher slots=1\nworker slots=1\n' >"$WORK/hostfile"
  chmod a+r "$WORK/hostfile"
  podman network create --subnet "$SUBNET" "$ID" >/dev/null
  local hosts=(--add-host "launcher:$NET_PREFIX.2" --add-host "worker:$NET_PREFIX.3")
  podman run -d --name "$ID-worker" --hostname worker --network "$ID" --ip "$NET_PREFIX.3" \
    "${hosts[@]}" --shm-size 1g -v "$WORK/ssh:/home/mpiuser/.ssh:ro" \
    "$image" /usr/sbin/sshd -De -f /home/mpiuser/.sshd_config >"$WORK/worker.id" 2>&1
  podman run -d --name "$ID-launcher" --hostname launcher --network "$ID" --ip "$NET_PREFIX.2" \
    "${hosts[@]}" --shm-size 1g -v "$WORK/ssh:/home/mpiuser/.ssh:ro" \
    -v "$WORK/hostfile:/etc/mpi/hostfile:ro" "$image" sleep 3600 >/dev/null
  local i up=0
  for i in $(seq 1 30); do  # polls, up to 30 s: sshd is up when the launcher can run a command there
    if podman exec "$ID-launcher" ssh worker true >/dev/null 2>&1; then up=1; break; fi
    sleep 1
  done
  [ "$up" = 1 ] || {
    podman logs "$ID-worker" >&2 || true
    echo "check_images: the worker's sshd (port 2222, as mpiuser) accepted no ssh from the launcher within 30 s" >&2
    return 1; }
  # One rank in each container.
  local where
  where="$(timeout 120 podman exec "$ID-launcher" mpirun -np 2 --hostfile /etc/mpi/hostfile hostname | sort | paste -sd' ')"
  [ "$where" = "launcher worker" ] || {
    echo "check_images: mpirun placed the ranks on '$where', not 'launcher worker'" >&2; return 1; }
  echo "    launcher: mpirun -np 2 --bind-to numa --hostfile /etc/mpi/hostfile bash run.sh"
  timeout 600 podman exec "$ID-launcher" \
    mpirun -np 2 --bind-to numa --hostfile /etc/mpi/hostfile bash run.sh \
    >"$WORK/mpirun.log" 2>&1 || {
    cat "$WORK/mpirun.log" >&2; echo "check_images: mpirun across the containers failed" >&2; return 1; }
  local got; got="$(epochs "$WORK/mpirun.log")"
  echo "    containers: $got"
  echo "    (epochs' loss and accuracy, host then containers; ranks on: $where)"
  grep -q "(2 processes)" "$WORK/mpirun.log" || {
    cat "$WORK/mpirun.log" >&2; echo "check_images: the job did not run 2 processes" >&2; return 1; }
  if [ -z "$got" ] || [ "$got" != "$want" ]; then
    cat "$WORK/mpirun.log" >&2
    echo "check_images: the containers' job ended at '$got', the host's at '$want'" >&2
    return 1
  fi
}

check_gcu() {
  echo "==> gcu: horovodrun -np 2 ... pytorch_synthetic_mlp.py --device gcu"
  timeout 900 podman run --rm --shm-size 1g "$PREFIX:gcu" \
    horovodrun -np 2 python examples/pytorch/pytorch_synthetic_mlp.py --device gcu \
    >"$WORK/gcu.log" 2>&1 || { cat "$WORK/gcu.log" >&2; echo "check_images: training on gcu failed" >&2; return 1; }
  grep -q "(2 processes on gcu)" "$WORK/gcu.log" && grep -q "loss fell from" "$WORK/gcu.log" || {
    cat "$WORK/gcu.log" >&2; echo "check_images: no training on gcu in the output" >&2; return 1; }
  echo "    $(grep -oE 'epoch 5/5: .*' "$WORK/gcu.log" | tail -1)"
}

check_cuda() {
  echo "==> cuda: the conformance suite at np 2 in plugin memory on the cuda plugin"
  timeout 900 podman run --rm --shm-size 1g "$PREFIX:cuda" \
    horovodrun -np 2 python -m horovod_accel.conformance --device cuda --memory plugin --quick \
    >"$WORK/cuda.log" 2>&1 || { tail -40 "$WORK/cuda.log" >&2; echo "check_images: conformance on cuda failed" >&2; return 1; }
  echo "    $(grep -E 'conformance: [0-9]+ passed' "$WORK/cuda.log" | tail -1)"
}

for image in "${IMAGES[@]}"; do
  case "$image" in
    cpu) check_cpu ;;
    gcu) check_gcu ;;
    cuda) check_cuda ;;
    *) echo "check_images: unknown image '$image' (cpu, gcu, cuda)" >&2; exit 2 ;;
  esac
done
echo "==> check_images: ${IMAGES[*]} passed"
