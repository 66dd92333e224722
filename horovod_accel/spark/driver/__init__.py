"""The Spark driver's side of horovod.spark.

Modules, one purpose each:
  spark_context.py  what is asked of pyspark: the active SparkContext, its
                    master, the Spark job that runs the tasks (job group)
  service.py        one job on the driver: store, Spark job, task registry
  registry.py       the registered tasks: heartbeats, departures, rank exits
  remote_rank.py    ranks in Spark tasks as the launcher's watchers see them
                    (the launcher hook), and their output
  placement.py      static ranks grouped by host
  discovery.py      elastic host discovery fed by the registered tasks
  elastic_job.py    run_elastic's job (horovodrun's elastic driver)
  args.py           checks and defaults of the public arguments
"""
