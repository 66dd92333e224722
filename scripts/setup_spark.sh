#!/usr/bin/env bash
# Horovod on Spark (horovod.spark; tests/python/test_spark_run.py,
# tests/python/test_spark_estimators.py, examples/spark/): Java 17+ on the
# system; pyspark 4, and for the estimators pyarrow and fsspec, in .venv.
# Run after scripts/setup.sh (which creates .venv). Idempotent: installs only
# what is missing; PYSPARK_VERSION picks another pyspark 4.x.
set -euo pipefail
cd "$(dirname "$0")/.."

PYSPARK_VERSION=${PYSPARK_VERSION:-4.3.0}
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi

java_major() {
  java -version 2>&1 | sed -n 's/.* version "\([0-9]*\).*/\1/p' | head -n 1
}

# pyspark 4 runs on Java 17 or 21.
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ] 2>/dev/null; then
  echo "==> installing Java 17 (openjdk-17-jre-headless)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  echo "scripts/setup_spark.sh: no .venv here; run scripts/setup.sh first" >&2
  exit 1
fi
if ! .venv/bin/python -c "import sys, pyspark; sys.exit(pyspark.__version__ != '$PYSPARK_VERSION')" \
    >/dev/null 2>&1; then
  echo "==> installing pyspark $PYSPARK_VERSION"
  .venv/bin/pip install -q "pyspark==$PYSPARK_VERSION"
fi
# The estimators (horovod.spark.torch / keras) read Parquet with pyarrow
# and reach the store through fsspec.
for pkg in pyarrow fsspec; do
  if ! .venv/bin/python -c "import $pkg" >/dev/null 2>&1; then
    echo "==> installing $pkg"
    .venv/bin/pip install -q "$pkg"
  fi
done
echo "==> Spark ready: pyspark $(.venv/bin/python -c 'import pyspark; print(pyspark.__version__)'), pyarrow $(.venv/bin/python -c 'import pyarrow; print(pyarrow.__version__)'), Java $(java_major)"
