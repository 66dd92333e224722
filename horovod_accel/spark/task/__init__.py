"""The Spark-task side of horovod.spark (upstream `horovod.spark.task`).

Modules, one purpose each:
  task_fn.py      the body of every Spark task: register, heartbeat, run the
                  driver's rank processes
  rank_child.py   one rank process: start, forward output, signals, exit
  output_sink.py  ships a rank's output to the driver through the store
  rank_main.py    the rank process's entry point (reads the job secret on stdin)

For code that runs on a rank: get_available_devices(), upstream's helper.
"""
import json
import os

from horovod_accel.spark import protocol


def get_available_devices():
    """The GPU addresses Spark assigned to the task this rank runs in
    (TaskContext.resources()['gpu'], e.g. ['0']), [] without GPU scheduling.
    Pick the device from these rather than from hvd.local_rank() when Spark
    schedules GPUs (spark.task.resource.gpu.amount)."""
    resources = json.loads(os.environ.get(protocol.TASK_RESOURCES_ENV) or "{}")
    return list(resources.get("gpu", []))


__all__ = ["get_available_devices"]
