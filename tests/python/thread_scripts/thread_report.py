"""Writes, as <THREAD_REPORT_DIR>/<rank>.json, the compute-thread variables
this rank got and the pools its framework ended up with after hvd.init().

argv[1]: "torch" (default), "tensorflow", or "tensorflow-late" (runs a
TensorFlow op before hvd.init(), which fixes TensorFlow's pools)."""
import json
import os
import sys

framework = sys.argv[1] if len(sys.argv) > 1 else "torch"
VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
             "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")
at_start = {k: os.environ.get(k) for k in VARIABLES}

if framework == "torch":
    import torch
    import horovod.torch as hvd
    hvd.init()
    pools = {"torch": torch.get_num_threads()}
else:
    import tensorflow as tf
    import horovod.tensorflow as hvd
    if framework == "tensorflow-late":
        tf.constant(1.0) + 1.0  # starts TensorFlow's runtime
    hvd.init()
    pools = {"intra": tf.config.threading.get_intra_op_parallelism_threads(),
             "inter": tf.config.threading.get_inter_op_parallelism_threads()}

# One file per rank (mpirun may join lines of different ranks on its stdout).
report = {"rank": hvd.rank(), "local_size": hvd.local_size(), "at_start": at_start,
          "pools": pools, "after_init": {k: os.environ.get(k) for k in VARIABLES}}
with open(os.path.join(os.environ["THREAD_REPORT_DIR"], f"{hvd.rank()}.json"), "w") as f:
    json.dump(report, f)
