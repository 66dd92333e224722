#!/usr/bin/env bash
# Fills .gpu/ (ignored by git; .gitignore) with what scripts/gpu_check.sh
# needs on a bare GPU machine that has Python, torch (CUDA), pytest, pybind11,
# cmake and a compiler but no network, no apt and no libgloo:
#
#   bash scripts/gpu_carry.sh          # run here, on a machine with Debian's libgloo-dev
#
# then hand .gpu to the GPU machine beside the working tree ("carry" it) and
# run `bash scripts/gpu_check.sh` there (docs/design/plugins.md, "Checking on a
# GPU machine"). Contents:
#   .gpu/gloo/           relocatable copy of Debian's gloo: include/gloo,
#                        lib/libgloo.so*, share/cmake/Gloo (the import prefix
#                        is computed from the file's own location, the library
#                        path rewritten to ${_IMPORT_PREFIX}/lib), so
#                        CMAKE_PREFIX_PATH=$PWD/.gpu/gloo finds it anywhere;
#   .gpu/gloo/deps/      libgloo's runtime dependencies that a bare image may
#                        lack (hiredis, ibverbs, libnl); gpu_check.sh uses each
#                        only where the machine has no library of that soname;
#   .gpu/gloo/fallback/  this machine's libstdc++.so.6, used only where the
#                        machine's own lacks a GLIBCXX version libgloo needs;
#   .gpu/python-include/ Python 3.12 headers (if found here), used only where
#                        the target interpreter has no Python.h;
#   .gpu/wheels/         mock (upstream's test/utils/common.py imports it) and
#                        packaging (test_torch.py imports it), pure Python;
#   .gpu/upstream/test/  upstream Horovod v0.28.1's test/parallel, test/utils
#                        and test/conftest.py (from the local mirror).
# Re-running replaces .gpu. Environment: HOROVOD_MIRROR (the mirror's git
# dir), UPSTREAM_REF (v0.28.1), PYTHON (the pip used to download wheels).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
DEST="$REPO/.gpu"
MIRROR=${HOROVOD_MIRROR:-/work/.mirror/horovod+horovod/repo}
REF=${UPSTREAM_REF:-v0.28.1}
PY=${PYTHON:-}
if [ -z "$PY" ]; then
  if [ -x "$REPO/.venv/bin/python" ]; then PY="$REPO/.venv/bin/python"; else PY=python3; fi
fi

die() { echo "gpu_carry: $*" >&2; exit 1; }
command -v dpkg >/dev/null 2>&1 || die "dpkg not found: this needs a Debian/Ubuntu machine with libgloo-dev"
dpkg -s libgloo-dev >/dev/null 2>&1 || die "libgloo-dev is not installed (apt-get install libgloo-dev)"
[ -d "$MIRROR" ] || die "no horovod mirror at $MIRROR (set HOROVOD_MIRROR to a horovod/horovod git dir)"

rm -rf "$DEST"
mkdir -p "$DEST/gloo/include" "$DEST/gloo/lib" "$DEST/gloo/share/cmake" "$DEST/gloo/deps" \
         "$DEST/gloo/fallback" "$DEST/wheels" "$DEST/upstream"

# --- gloo -------------------------------------------------------------------
FILES=$(dpkg -L libgloo-dev libgloo0)
INC=$(printf '%s\n' "$FILES" | grep -m1 '/include/gloo$') || die "libgloo-dev has no include/gloo"
cp -r "$INC" "$DEST/gloo/include/"
LIBREAL=""
for f in $(printf '%s\n' "$FILES" | grep -E '/libgloo\.so[.0-9]*$'); do
  if [ -L "$f" ]; then
    ln -sf "$(readlink "$f")" "$DEST/gloo/lib/$(basename "$f")"
  else
    cp "$f" "$DEST/gloo/lib/"
    LIBREAL=$f
  fi
done
[ -n "$LIBREAL" ] || die "libgloo0 has no libgloo.so.X.Y.Z"
LIBDIR=$(dirname "$LIBREAL")
CMAKEDIR=$(printf '%s\n' "$FILES" | grep -m1 '/cmake/Gloo$') || die "libgloo-dev has no cmake/Gloo"
cp -r "$CMAKEDIR" "$DEST/gloo/share/cmake/"
# GlooTargets.cmake computes _IMPORT_PREFIX four levels above itself
# (share/cmake/Gloo/GlooTargets.cmake -> the prefix) and GlooConfig.cmake its
# include dir three levels above its folder, so both relocate as they are once
# the files sit under <prefix>/share/cmake/Gloo. The per-configuration file
# names the library by absolute path (e.g. /usr/lib/libgloo.so.0.5.0):
# rewrite that to the relocated prefix.
for f in "$DEST"/gloo/share/cmake/Gloo/GlooTargets-*.cmake; do
  sed -i "s#\"$LIBDIR/#\"\${_IMPORT_PREFIX}/lib/#g" "$f"
  grep -q "\"$LIBDIR/" "$f" && die "could not relocate $f"
done
grep -q '_IMPORT_PREFIX}/lib/libgloo' "$DEST"/gloo/share/cmake/Gloo/GlooTargets-*.cmake \
  || die "GlooTargets-*.cmake does not name the library as expected"

# Runtime dependencies outside the C/C++ runtime (hiredis, ibverbs, libnl...),
# stored under their sonames.
ldd "$LIBREAL" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r soname path; do
  case "$soname" in
    libc.so.*|libm.so.*|libstdc++.so.*|libgcc_s.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
    *) cp -L "$path" "$DEST/gloo/deps/$soname" ;;
  esac
done
STDCXX=$(ldd "$LIBREAL" | awk '$1 ~ /^libstdc\+\+\.so/ {print $3}')
[ -n "$STDCXX" ] && cp -L "$STDCXX" "$DEST/gloo/fallback/libstdc++.so.6"
# The newest GLIBCXX/GLIBC versions libgloo and its dependencies need (for
# gpu_check.sh's preflight).
objdump -T "$LIBREAL" "$DEST"/gloo/deps/* 2>/dev/null | grep -o 'GLIBCXX_[0-9.]*\|GLIBC_[0-9.]*' \
  | sort -uV > "$DEST/gloo/needed_versions.txt" || true

# --- Python headers (a fallback for an interpreter without Python.h) --------
for cand in python3.12 /root/.pyenv/versions/3.12*/bin/python3.12; do
  inc=$("$cand" -c 'import sys, sysconfig; sys.version_info[:2] == (3, 12) or sys.exit(1); print(sysconfig.get_paths()["include"])' 2>/dev/null) || continue
  if [ -f "$inc/Python.h" ]; then
    mkdir -p "$DEST/python-include"
    cp -r "$inc" "$DEST/python-include/python3.12"
    break
  fi
done

# --- wheels -----------------------------------------------------------------
"$PY" -m pip download -q --no-deps -d "$DEST/wheels" mock packaging \
  || die "pip download mock packaging failed"

# --- upstream's tests -------------------------------------------------------
git --git-dir="$MIRROR" archive "$REF" test/parallel test/utils test/conftest.py \
  | tar -x -C "$DEST/upstream"
[ -f "$DEST/upstream/test/parallel/test_torch.py" ] || die "no test/parallel/test_torch.py at $REF"
echo "$REF $(git --git-dir="$MIRROR" rev-parse "$REF^{commit}")" > "$DEST/upstream/REF"

{
  echo "gpu_carry: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-?}")"
  echo "gloo: $(dpkg-query -W -f='${Package} ${Version}\n' libgloo-dev libgloo0 | tr '\n' ' ')"
  (cd "$DEST" && find . -type f -o -type l | sort | grep -v '^./upstream/test/\|^./gloo/include/\|^./python-include/')
} > "$DEST/MANIFEST"
du -sh "$DEST"
echo "gpu_carry: .gpu is ready; carry it with the working tree and run: bash scripts/gpu_check.sh"
