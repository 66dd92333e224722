#!/usr/bin/env bash
# Runs upstream Horovod's own multi-process test suites, unchanged, against
# the installed project (.venv's `horovod`), the way upstream's CI runs them:
#
#   bash scripts/upstream_suites.sh REF [NP...]
#
# REF: a horovod/horovod checkout (0.28.1), i.e. a folder holding
# test/parallel and test/utils; nothing is fetched and nothing is written
# into REF or this repository: REF/test is copied to a scratch folder and each
# file runs there as
#   horovodrun -np N -H localhost:N --gloo python -m pytest -v -p no:cacheprovider FILE
# (every rank runs the whole file), under a hard timeout. NP defaults to
# "2 3". Prints, per file and np, rank 0's pass/fail/error/skip counts (from
# its pytest summary line; counted from its -v lines when the job died
# before one) and saves every log in an output folder (printed).
#
# Environment:
#   SUITES="test_torch.py ..."  files of test/parallel to run (default: the
#                               torch, TF and Keras suites below)
#   SUITE_TIMEOUT=1800          seconds per file and np
#   OUT_DIR=DIR                 where the logs go (default: a new /tmp folder)
# Exit status: 0 if every run passed, 1 otherwise, 2 on bad usage.
set -uo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
usage() { echo "usage: bash scripts/upstream_suites.sh REF [NP...]  (REF: a horovod checkout with test/parallel)" >&2; exit 2; }
[ $# -ge 1 ] || usage
REF=$1; shift
[ -d "$REF/test/parallel" ] && [ -d "$REF/test/utils" ] || {
  echo "upstream_suites: $REF has no test/parallel and test/utils; give the root of a horovod checkout" >&2; exit 2; }
NPS=("$@"); [ ${#NPS[@]} -gt 0 ] || NPS=(2 3)
for np in "${NPS[@]}"; do [[ "$np" =~ ^[1-9][0-9]*$ ]] || { echo "upstream_suites: NP '$np' is not a positive integer" >&2; exit 2; }; done
read -r -a FILES <<< "${SUITES:-test_torch.py test_tensorflow.py test_tensorflow2_keras.py test_tensorflow_keras.py test_keras.py}"
SUITE_TIMEOUT=${SUITE_TIMEOUT:-1800}

PY="$REPO/.venv/bin/python"
[ -x "$PY" ] || { echo "upstream_suites: $PY is missing; run bash scripts/setup.sh first" >&2; exit 2; }
export PATH="$REPO/.venv/bin:$PATH"   # `python` and `horovodrun` are the venv's
HOROVODRUN=(horovodrun)
[ -x "$REPO/.venv/bin/horovodrun" ] || HOROVODRUN=("$PY" -m horovod.runner.launch)

# Upstream's test dependencies (test/utils/common.py imports mock;
# test_tensorflow2_keras.py imports parameterized).
for dep in pytest mock parameterized; do
  if ! "$PY" -c "import $dep" >/dev/null 2>&1; then
    echo "upstream_suites: installing $dep into .venv from PyPI (an upstream test dependency)"
    "$PY" -m pip install -q "$dep" || { echo "upstream_suites: could not install $dep" >&2; exit 2; }
  fi
done

OUT=${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/upstream_suites.XXXXXX")}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/upstream_suites_scratch.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT
cp -r "$REF/test" "$SCRATCH/test"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
echo "upstream_suites: $REF/test against $("$PY" -c 'import horovod, horovod_accel; print(f"horovod {horovod.__version__} (horovod_accel {horovod_accel.__version__})")' 2>&1)"
echo "upstream_suites: logs in $OUT"

# Reads one run's logs; prints one tab-separated row:
# status passed failed errors skipped other notes
cat > "$SCRATCH/parse.py" <<'EOF'
import glob, os, re, sys

run_dir, log, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
ranks = sorted(glob.glob(os.path.join(run_dir, "rank.*")))  # rank 0 sorts first (zero-padded)

def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""

combined = read(log)
if ranks:
    out0 = read(os.path.join(ranks[0], "stdout"))
else:  # no per-rank files (the launcher did not start): rank 0's prefixed lines
    out0 = "\n".join(l[len("[0]<stdout>:"):] for l in combined.splitlines()
                     if l.startswith("[0]<stdout>:"))

KINDS = {"passed": "passed", "failed": "failed", "error": "errors", "errors": "errors",
         "skipped": "skipped", "xfailed": "other", "xpassed": "other"}

def summary(text):
    """Counts from the last pytest summary line ('== 3 failed, 10 passed in 5.0s ==')."""
    found = None
    for line in text.splitlines():
        line = line.strip()
        m = re.match(r"^=+ (.*?) in [0-9.]+s\b.*=+$", line)
        if m and (re.search(r"\d+ (passed|failed|errors?|skipped|xfailed|xpassed|deselected|"
                            r"warnings?)\b", m.group(1)) or "no tests ran" in m.group(1)):
            found = m.group(1)
    if found is None:
        return None
    counts = dict.fromkeys(("passed", "failed", "errors", "skipped", "other"), 0)
    for n, kind in re.findall(r"(\d+) (\w+)", found):
        if kind in KINDS:
            counts[KINDS[kind]] += int(n)
    return counts

def verbose_counts(text):
    """Counts from pytest -v result words, for a run that ended without a summary."""
    counts = dict.fromkeys(("passed", "failed", "errors", "skipped", "other"), 0)
    words = {"PASSED": "passed", "FAILED": "failed", "ERROR": "errors", "SKIPPED": "skipped",
             "XFAIL": "other", "XPASS": "other"}
    last_started = None
    for line in text.splitlines():
        m = re.match(r"^(\S+::\S+)(?: (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b)?", line)
        if m:
            if m.group(2):
                counts[words[m.group(2)]] += 1
                last_started = None
            else:
                last_started = m.group(1)
    return counts, last_started

notes = []
# pytest 9 runs unittest subTest()s (upstream's TF graph/eager modes) as
# subtests: the summary counts test functions, the subtests separately.
subtests = dict((outcome, n) for n, outcome in
                re.findall(r"(\d+) subtests (passed|failed|skipped)", out0))  # the last of each
notes.extend(f"{n} subtests {outcome}" for outcome, n in subtests.items())
counts = summary(out0)
if counts is None:
    counts, last = verbose_counts(out0)
    if last:
        notes.append(f"rank 0 was in {last}")
    if "collected" not in out0 and "ERROR collecting" not in out0:
        notes.append("rank 0 never finished collecting")
first = re.search(r"horovodrun: job failed: rank (\d+) \(host [^)]*\) failed with ([^\n]*?)\.?$",
                  combined, re.M)
if rc in (124, 137):
    status = "timeout"
elif summary(out0) is not None:
    status = "ok" if rc == 0 and counts["failed"] == 0 and counts["errors"] == 0 else "failed"
elif rc == 0:
    status = "no-summary"
elif first and first.group(1) != "0" and first.group(2) == "exit code 1":
    # Another rank's pytest ended first with failed tests and the launcher's
    # fail-fast stopped rank 0 before its summary: its counts are partial.
    status = "failed"
    notes.insert(0, "partial counts")
else:
    status = "crashed"
if first and status != "ok":
    notes.append(f"rank {first.group(1)} exited first ({first.group(2)})")
# Ranks whose own summary differs from rank 0's.
for d in ranks[1:]:
    c = summary(read(os.path.join(d, "stdout")))
    if c is not None and c != summary(out0):
        r = d.rsplit(".", 1)[-1].lstrip("0") or "0"
        notes.append(f"rank {r}: " + " ".join(f"{k}={v}" for k, v in c.items() if v))
print("\t".join([status] + [str(counts[k]) for k in ("passed", "failed", "errors", "skipped",
                                                     "other")] + ["; ".join(notes) or "-"]))
EOF

ROWS=()
all_ok=1
interrupted=0
child=""
trap 'interrupted=1; [ -n "$child" ] && kill -TERM "$child" 2>/dev/null' INT TERM

for f in "${FILES[@]}"; do
  for np in "${NPS[@]}"; do
    [ "$interrupted" = 0 ] || break 2
    name="${f%.py}.np$np"
    log="$OUT/$name.log"
    if [ ! -f "$SCRATCH/test/parallel/$f" ]; then
      ROWS+=("$f	$np	missing	0	0	0	0	0	no such file in $REF/test/parallel	0")
      all_ok=0
      continue
    fi
    cmd=("${HOROVODRUN[@]}" -np "$np" -H "localhost:$np" --gloo --output-filename "$OUT/$name"
         python -m pytest -v -p no:cacheprovider "$f")
    echo "==> $f at np $np (timeout ${SUITE_TIMEOUT}s): $log"
    start=$SECONDS
    {
      echo "# cd $SCRATCH/test/parallel && ${cmd[*]}"
      # SIGTERM first: horovodrun then stops every rank; SIGKILL 60 s later.
      (cd "$SCRATCH/test/parallel" && exec timeout -k 60 "$SUITE_TIMEOUT" "${cmd[@]}") &
      child=$!
      wait "$child"; rc=$?
      while kill -0 "$child" 2>/dev/null; do wait "$child"; rc=$?; done  # a trap interrupted wait
      child=""
      echo "# exit code $rc after $((SECONDS - start)) s"
      echo "$rc" > "$OUT/$name.rc"
    } > "$log" 2>&1
    rc=$(cat "$OUT/$name.rc" 2>/dev/null || echo 1)
    secs=$((SECONDS - start))
    row=$("$PY" "$SCRATCH/parse.py" "$OUT/$name" "$log" "$rc" 2>&1 | tail -n 1)
    [ "$(printf '%s' "$row" | awk -F'\t' '{print NF}')" = 7 ] || row="parse-error	0	0	0	0	0	${row//	/ }"
    [ "$interrupted" = 0 ] || row="interrupted	${row#*	}"
    ROWS+=("$f	$np	$row	$secs")
    status=${row%%	*}
    [ "$status" = ok ] || all_ok=0
    echo "    $status (exit code $rc, ${secs}s): $(printf '%s' "$row" | awk -F'\t' '{printf "passed %s, failed %s, errors %s, skipped %s", $2, $3, $4, $5}')"
  done
done

# Table: suite np status passed failed errors skipped other seconds notes
{
  printf '%-28s %3s %-11s %6s %6s %6s %7s %5s %6s  %s\n' suite np status passed failed errors skipped other secs notes
  for r in "${ROWS[@]}"; do
    IFS=$'\t' read -r s n st p fa e sk o notes secs <<< "$r"
    printf '%-28s %3s %-11s %6s %6s %6s %7s %5s %6s  %s\n' "$s" "$n" "$st" "$p" "$fa" "$e" "$sk" "$o" "$secs" "$notes"
  done
} | tee "$OUT/summary.txt"
echo "(counts are rank 0's; 'other' = xfailed + xpassed; logs: $OUT/<suite>.np<N>.log, per-rank output: $OUT/<suite>.np<N>/rank.<R>/)"
[ "$interrupted" = 0 ] || exit 130
[ "$all_ok" = 1 ]
