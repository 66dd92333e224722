"""A PluggableDevice (the emulated "GCU") that no horovod_accel device plugin
serves: Horovod's kernels are not registered for it, so TensorFlow runs the
ops on the CPU kernels (copying the tensors), and the results are right.
Run by test_tf_device.py through horovodrun WITHOUT the GCU device plugin."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.framework import load_library  # noqa: E402

load_library.load_pluggable_device_library(os.environ["HVDA_TEST_TF_PLUGIN"])
import horovod.tensorflow as hvd  # noqa: E402
from horovod.tensorflow import mpi_ops  # noqa: E402

hvd.init()
with tf.device("/device:GCU:0"):
    x = tf.identity(tf.constant(np.full((3, 5), hvd.rank() + 1, np.float32)))
    y = hvd.allreduce(x, op=hvd.Sum)
assert x.device.endswith("GCU:0"), x.device
assert y.device.endswith("CPU:0"), y.device
np.testing.assert_allclose(y.numpy(), np.full((3, 5), sum(range(1, hvd.size() + 1))))
why = mpi_ops._DEVICE_KERNELS.outcome["GCU"]
assert "no horovod_accel device plugin serves 'gcu'" in why, why
print(f"NO PLUGIN OK rank {hvd.rank()}", flush=True)
