"""A peer's loss is an error, never a hang: rank 1 exits abruptly after a
barrier; rank 0's next allreduce (eager, then inside tf.function) must raise
a TensorFlow error naming the problem. Run by test_tf_ops.py at np 2."""
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

import horovod.tensorflow as hvd  # noqa: E402

hvd.init()
hvd.barrier()
if hvd.rank() == 1:
    os._exit(0)
t0 = time.monotonic()
for label, fn in [("eager", lambda: hvd.allreduce(tf.ones([4]), name="after_loss")),
                  ("function", tf.function(lambda: hvd.allreduce(tf.ones([4]))))]:
    try:
        fn()
    except (tf.errors.AbortedError, tf.errors.UnknownError, tf.errors.FailedPreconditionError) as e:
        print(f"RAISED {label} {type(e).__name__} after {time.monotonic() - t0:.1f}s: {e}", flush=True)
    else:
        raise AssertionError(f"{label}: allreduce after a lost peer did not fail")
print("PEER-LOSS-OK", flush=True)
