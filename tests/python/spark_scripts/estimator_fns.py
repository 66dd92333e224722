"""Loss and metric functions that test_spark_estimators.py gives its
estimators. They travel by reference (module `estimator_fns`): the training
processes import this file through the caller's sys.path, which
horovod.spark.run's call record carries."""
import os


def cross_entropy(output, label):
    """Upstream's idiom: labels arrive as float32, class indices need long."""
    import torch.nn.functional as F  # noqa: PLC0415
    return F.cross_entropy(output, label.long())


def accuracy(output, label):
    return (output.argmax(dim=1) == label.long()).float().mean()


def cross_entropy_failing_on_rank_1(output, label):
    if os.environ.get("HOROVOD_RANK") == "1":
        raise ArithmeticError("loss exploded on purpose")
    return cross_entropy(output, label)
