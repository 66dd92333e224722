"""Gradient compression for allreduce/reducescatter (upstream
`horovod.tensorflow.compression`): the shared concept of
horovod_accel/common/compression.py over TensorFlow tensors (tf.cast, so it
works eagerly, inside tf.function and in TF1 graphs)."""
import tensorflow as tf

from horovod_accel.common.compression import Compressor, NoneCompressor, compression_namespace

FP16Compressor, BF16Compressor, Compression = compression_namespace(
    tf.float16, tf.bfloat16, is_floating=lambda dtype: dtype.is_floating, cast=tf.cast)

__all__ = ["Compressor", "NoneCompressor", "FP16Compressor", "BF16Compressor", "Compression"]
