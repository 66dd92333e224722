"""Upstream's horovod.spark.torch: TorchEstimator fits a PyTorch model to a
Spark DataFrame with Horovod; TorchModel is the trained Transformer.
Modules: estimator.py (the estimator's params and hooks), model.py (the
Transformer), remote.py (the ranks' training loop), checkpoint.py (its
checkpoint file)."""
from horovod_accel.spark.torch.estimator import TorchEstimator
from horovod_accel.spark.torch.model import TorchModel

__all__ = ["TorchEstimator", "TorchModel"]
