#!/usr/bin/env python
"""Start-up overhead of horovod.spark.run against horovodrun, measured back to
back in one invocation.

    .venv/bin/python benchmarks/spark_startup.py                 # np 2, 3 repeats, ~1 min
    .venv/bin/python benchmarks/spark_startup.py --repeats 5 --master 'local[4]' --np 4
    .venv/bin/python benchmarks/spark_startup.py --init --json /tmp/spark_startup.json

One job = `--np` ranks running an empty function (`return 0`; with --init,
`import horovod.torch; hvd.init()` first), timed from the call to its return
in this process:

  spark      horovod.spark.run(empty, num_proc=np) on a SparkSession (--master,
             default local[2]) created once before the timing; its creation
             and the first Spark job of the session (the JVM warms up) are
             reported separately
  run        horovod.run(empty, num_proc=np): the same rank-side work (run_task
             fetches the call, runs it, stores the result) without Spark
  horovodrun `horovodrun -np N python -c <empty>` as a new process (its own
             interpreter start and imports included): what a user waits for

Repeats interleave the three (spark, run, horovodrun, spark, ...), so a burst of
load hits all of them. Per peer: median [min..max] over --repeats; ratios are
per repeat (spark / run, spark / horovodrun), reported as median [min..max].
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def empty():
    return 0


def empty_init():
    import horovod.torch as hvd  # noqa: PLC0415
    hvd.init()
    return hvd.rank()


def make_session(master):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession  # noqa: PLC0415
    t0 = time.perf_counter()
    spark = (SparkSession.builder.master(master).appName("hvda-spark-startup")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark, time.perf_counter() - t0


def time_spark(fn, np_):
    import horovod.spark  # noqa: PLC0415
    t0 = time.perf_counter()
    out = horovod.spark.run(fn, num_proc=np_, verbose=0)
    dt = time.perf_counter() - t0
    assert len(out) == np_, out
    return dt


def time_run(fn, np_):
    import horovod  # noqa: PLC0415
    t0 = time.perf_counter()
    out = horovod.run(fn, num_proc=np_, verbose=0)
    dt = time.perf_counter() - t0
    assert len(out) == np_, out
    return dt


def time_horovodrun(init, np_):
    code = "import horovod.torch as hvd; hvd.init()" if init else "pass"
    cmd = [sys.executable, "-m", "horovod_accel.runner.launch", "-np", str(np_), sys.executable,
           "-c", code]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, env.get("PYTHONPATH")]))
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, timeout=300)
    return time.perf_counter() - t0


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "all": values}


def fmt(s, unit="s"):
    return f"{s['median']:.2f} {unit} [{s['min']:.2f}..{s['max']:.2f}]"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--init", action="store_true", help="ranks import horovod.torch and init()")
    p.add_argument("--json", help="also write the results here")
    a = p.parse_args()
    sys.path.insert(0, REPO)
    fn = empty_init if a.init else empty

    spark, session_s = make_session(a.master)
    first_s = time_spark(fn, a.np)  # the session's first Spark job: JVM warm-up
    times = {"spark": [], "run": [], "horovodrun": []}
    for _ in range(a.repeats):
        times["spark"].append(time_spark(fn, a.np))
        times["run"].append(time_run(fn, a.np))
        times["horovodrun"].append(time_horovodrun(a.init, a.np))
    spark.stop()

    ratio_run = [s / r for s, r in zip(times["spark"], times["run"])]
    ratio_cli = [s / r for s, r in zip(times["spark"], times["horovodrun"])]
    res = {"np": a.np, "master": a.master, "init": a.init, "repeats": a.repeats,
           "session_creation_s": session_s, "first_spark_run_s": first_s,
           **{k: summary(v) for k, v in times.items()},
           "ratio_spark_over_run": summary(ratio_run),
           "ratio_spark_over_horovodrun": summary(ratio_cli)}
    print(f"np {a.np}, {'hvd.init()' if a.init else 'empty fn'}, master {a.master}, "
          f"{a.repeats} repeats: median [min..max]")
    print(f"  SparkSession creation (excluded): {session_s:.2f} s; first Spark job of the "
          f"session (excluded): {first_s:.2f} s")
    print("| job | time | ratio horovod.spark.run / it |")
    print("|---|---|---|")
    print(f"| horovod.spark.run | {fmt(res['spark'])} | 1 |")
    print(f"| horovod.run | {fmt(res['run'])} | {fmt(res['ratio_spark_over_run'], 'x')} |")
    print(f"| horovodrun (new process) | {fmt(res['horovodrun'])} | "
          f"{fmt(res['ratio_spark_over_horovodrun'], 'x')} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
