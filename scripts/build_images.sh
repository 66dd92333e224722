#!/usr/bin/env bash
# Builds the images docker/Dockerfile.{cpu,gcu,cuda} (docker/README.md): the
# release wheels first (scripts/build_wheels.sh into dist/), then each image,
# which installs them, with podman (or docker where podman is missing).
#
# Bases: where a registry base cannot be pulled (as on machines that reach
# only PyPI and Debian's packages), a stand-in is made from Debian's packages
# and the build says so:
#   cpu   python:3.11-slim-bookworm  -> Debian 12 + python3 (scripts/stand_in_base.sh)
#   gcu   the vendor's image (HVDA_GCU_BASE_IMAGE; nothing public to pull)
#                                    -> docker/stand_in/Containerfile.gcu: the emulated
#                                       TOPS runtime + ECCL and a 'gcu' torch device
#   cuda  nvidia/cuda:12.6.3-runtime-ubuntu24.04
#                                    -> docker/stand_in/Containerfile.cuda: the emulated
#                                       CUDA runtime + NCCL
# After each build the image's default command (`horovodrun --check-build`)
# runs and must list what the image is for (Gloo; the gcu or cuda plugin
# usable). scripts/check_images.sh then runs jobs in them.
#
# Usage: scripts/build_images.sh [cpu] [gcu] [cuda]     (default: all three)
# Env:   HVDA_ENGINE          podman (default when installed) or docker
#        HVDA_STAND_IN        auto (default): stand-ins for bases that cannot be
#                             pulled; yes: always; no: never (fail instead)
#        HVDA_GCU_BASE_IMAGE  the vendor's GCU image (default: the stand-in)
#        HVDA_IMAGE_EXTRA_PIP EXTRA_PIP of every image (default torch==2.13.0)
#        HVDA_IMAGE_PREFIX    image names (default horovod_accel: horovod_accel:cpu, ...)
# Images are built with the host's network; podman builds also see the host's
# pip settings and CA bundle (scripts/pip_passthrough.py, read-only mounts
# that do not stay in the image).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$ROOT/docker/podman/containers.conf}"
ENGINE="${HVDA_ENGINE:-}"
if [ -z "$ENGINE" ]; then
  if command -v podman >/dev/null; then ENGINE=podman; else ENGINE=docker; fi
fi
command -v "$ENGINE" >/dev/null || {
  echo "build_images: $ENGINE is not installed (Debian/Ubuntu: apt-get install podman runc mmdebstrap)" >&2
  exit 1; }
STAND_IN="${HVDA_STAND_IN:-auto}"
PREFIX="${HVDA_IMAGE_PREFIX:-horovod_accel}"
EXTRA_PIP="${HVDA_IMAGE_EXTRA_PIP:-torch==2.13.0}"
IMAGES=("$@")
[ ${#IMAGES[@]} -gt 0 ] || IMAGES=(cpu gcu cuda)
for image in "${IMAGES[@]}"; do
  case "$image" in cpu|gcu|cuda) ;; *) echo "build_images: unknown image '$image' (cpu, gcu, cuda)" >&2; exit 2 ;; esac
done
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x "$ROOT/.venv/bin/python" ]; then PY="$ROOT/.venv/bin/python"; else PY=python3; fi
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

BUILD_OPTS=(--network host)
if [ "$ENGINE" = podman ]; then
  mapfile -t PIP_MOUNTS < <("$PY" "$ROOT/scripts/pip_passthrough.py" "$WORK/pip")
  BUILD_OPTS+=("${PIP_MOUNTS[@]}")
fi

# pullable REF: the base is here or can be pulled.
pullable() {
  "$ENGINE" image inspect "$1" >/dev/null 2>&1 || timeout 300 "$ENGINE" pull -q "$1" >/dev/null 2>&1
}
# use_stand_in REF: whether to replace REF by a stand-in (or fail).
use_stand_in() {
  case "$STAND_IN" in
    yes) return 0 ;;
    no) pullable "$1" && return 1
        echo "build_images: cannot pull $1 and HVDA_STAND_IN=no" >&2; exit 1 ;;
    *) if pullable "$1"; then return 1; fi
       echo "==> $1 cannot be pulled here: using a stand-in made from Debian's packages" >&2
       return 0 ;;
  esac
}
PYTHON_STAND_IN=localhost/hvda-stand-in/debian12-python
python_stand_in() {
  bash "$ROOT/scripts/stand_in_base.sh" "$PYTHON_STAND_IN" python3 python3-venv python3-pip
}
# vendor_stand_in DEVICE TAG: docker/stand_in/Containerfile.DEVICE over the
# emulated libraries of tests/emulated (built here first).
vendor_stand_in() {
  local device="$1" tag="$2" ctx="$WORK/stand-in-$1"
  python_stand_in
  bash "$ROOT/scripts/emulated_$device.sh" true
  mkdir -p "$ctx/lib"
  case "$device" in
    gcu) cp build/emulated/lib/{libtopsrt_emu.so,libeccl_emu.so,libhvda_emu_core.so} "$ctx/lib/"
         mkdir -p "$ctx/torch_gcu"
         cp -r tests/emulated/torch_gcu/csrc tests/emulated/torch_gcu/site "$ctx/torch_gcu/"
         find "$ctx/torch_gcu" -name __pycache__ -prune -exec rm -rf {} + ;;
    cuda) cp build/emulated/lib/{libcudart_emu.so,libnccl_emu.so,libhvda_emu_core.so} "$ctx/lib/" ;;
  esac
  echo "==> stand-in base $tag (docker/stand_in/Containerfile.$device)"
  "$ENGINE" build -q "${BUILD_OPTS[@]}" --build-arg BASE="$PYTHON_STAND_IN" \
    -f "$ROOT/docker/stand_in/Containerfile.$device" -t "$tag" "$ctx" >/dev/null
}

echo "==> the wheels (scripts/build_wheels.sh dist)"
PYTHON="$PY" bash "$ROOT/scripts/build_wheels.sh" "$ROOT/dist" >"$WORK/wheels.log" 2>&1 || {
  cat "$WORK/wheels.log" >&2; echo "build_images: scripts/build_wheels.sh failed (above)" >&2; exit 1; }

report=()
for image in "${IMAGES[@]}"; do
  args=(--build-arg "EXTRA_PIP=$EXTRA_PIP")
  base_note=""
  case "$image" in
    cpu)
      if use_stand_in python:3.11-slim-bookworm; then
        python_stand_in
        args+=(--build-arg "PYTHON_IMAGE=$PYTHON_STAND_IN")
        base_note=" on a stand-in for python:3.11-slim-bookworm"
      fi
      want='\[X\] Gloo' ;;
    gcu)
      if [ -n "${HVDA_GCU_BASE_IMAGE:-}" ] && [ "$STAND_IN" != yes ]; then
        args+=(--build-arg "BASE_IMAGE=$HVDA_GCU_BASE_IMAGE")
      else
        [ "$STAND_IN" != no ] || { echo "build_images: gcu needs HVDA_GCU_BASE_IMAGE (HVDA_STAND_IN=no)" >&2; exit 1; }
        vendor_stand_in gcu localhost/hvda-stand-in/gcu-sdk
        args+=(--build-arg "BASE_IMAGE=localhost/hvda-stand-in/gcu-sdk")
        base_note=" on a stand-in for the vendor's image (emulated TOPS + ECCL)"
      fi
      want="\[X\] gcu " ;;
    cuda)
      if use_stand_in nvidia/cuda:12.6.3-runtime-ubuntu24.04; then
        vendor_stand_in cuda localhost/hvda-stand-in/cuda-runtime
        args+=(--build-arg "BASE_IMAGE=localhost/hvda-stand-in/cuda-runtime")
        base_note=" on a stand-in for nvidia/cuda (emulated CUDA runtime + NCCL)"
      fi
      want="\[X\] cuda " ;;
  esac
  tag="$PREFIX:$image"
  echo "==> $tag (docker/Dockerfile.$image$base_note)"
  t0=$(date +%s)
  "$ENGINE" build "${BUILD_OPTS[@]}" "${args[@]}" -f "docker/Dockerfile.$image" -t "$tag" . \
    >"$WORK/build-$image.log" 2>&1 || {
    tail -40 "$WORK/build-$image.log" >&2; echo "build_images: building $tag failed (above)" >&2; exit 1; }
  secs=$(( $(date +%s) - t0 ))
  "$ENGINE" run --rm "$tag" >"$WORK/check-$image.log" 2>&1 || true
  if ! grep -q "$want" "$WORK/check-$image.log"; then
    cat "$WORK/check-$image.log" >&2
    echo "build_images: $tag's horovodrun --check-build does not show '$want' (above)" >&2
    exit 1
  fi
  size=$("$ENGINE" image inspect --format '{{.Size}}' "$tag")
  report+=("$tag: built in ${secs} s, $((size / 1000000)) MB$base_note")
done
echo "==> images:"
printf '    %s\n' "${report[@]}"
