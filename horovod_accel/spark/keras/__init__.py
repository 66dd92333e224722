"""Upstream's horovod.spark.keras for Keras 3: KerasEstimator fits a Keras
model to a Spark DataFrame with Horovod; KerasModel is the trained
Transformer. Modules: estimator.py (the estimator's params and hooks),
model.py (the Transformer), remote.py (the ranks' training),
checkpoint.py (its checkpoint files; model bytes)."""
from horovod_accel.spark.keras.estimator import KerasEstimator
from horovod_accel.spark.keras.model import KerasModel

__all__ = ["KerasEstimator", "KerasModel"]
