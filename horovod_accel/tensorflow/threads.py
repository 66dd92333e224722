"""TensorFlow's side of the per-rank compute threads (common/compute_threads.py):
registered with the default runtime when the adapter is imported."""
import tensorflow as tf

from horovod_accel.common.default_runtime import DEFAULT_RUNTIME


def set_tensorflow_threads(n):
    """Sizes TensorFlow's intra-op and inter-op pools to n threads where the
    user left them at 0 (TensorFlow's "decide for me"). TensorFlow fixes both
    when its runtime starts (the first op or device query); after that they
    keep their size, and the returned sentence says so. None on success."""
    threading = tf.config.threading
    try:
        if threading.get_intra_op_parallelism_threads() == 0:
            threading.set_intra_op_parallelism_threads(n)
        if threading.get_inter_op_parallelism_threads() == 0:
            threading.set_inter_op_parallelism_threads(n)
    except RuntimeError:
        return ("TensorFlow's runtime started before hvd.init(), which fixed its thread pools; "
                "call hvd.init() before running any TensorFlow op, or set TF_NUM_INTRAOP_THREADS "
                "and TF_NUM_INTEROP_THREADS before starting the process.")
    return None


DEFAULT_RUNTIME.add_thread_setter("tensorflow", set_tensorflow_threads)
