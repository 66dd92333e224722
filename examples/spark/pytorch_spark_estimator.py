"""Horovod on Spark, the pyspark.ml way: a TorchEstimator fits a classifier
to a DataFrame, and the TorchModel it returns adds predictions to another.

The data is scikit-learn's digits set (1797 images of 8x8 pixels, shipped
inside the package: nothing is downloaded) as a DataFrame with a vector
column `features` and an integer column `label`; every fifth row is held
out for testing. fit() writes the training rows as Parquet into the store,
trains on --num-proc Spark tasks (each reads its own shard), checkpoints
every epoch under <store>/runs/<run_id>, and returns the model; running the
script again with the same --store and --run-id resumes that run (add
--epochs to train further).

    python examples/spark/pytorch_spark_estimator.py                 # local[2], 2 processes
    python examples/spark/pytorch_spark_estimator.py --master 'local[4]' --num-proc 4
    spark-submit --master spark://host:7077 examples/spark/pytorch_spark_estimator.py \\
        --num-proc 8 --store /shared/horovod      # a folder every executor can write

Needs pyspark, Java, pyarrow and fsspec (scripts/setup_spark.sh installs
them). Exits non-zero if the test accuracy is not above --min-accuracy (0.9).
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

from horovod.spark.common.store import Store
from horovod.spark.torch import TorchEstimator


def cross_entropy(output, label):
    # Labels reach the loss as float32 tensors (upstream's convention).
    return F.cross_entropy(output, label.long())


def accuracy(output, label):
    return (output.argmax(dim=1) == label.long()).float().mean()


def digits_frame(spark):
    """(train_df, test_df) of scikit-learn's digits, pixels scaled to [0, 1]."""
    from pyspark.ml.linalg import Vectors
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    rows = [(i, Vectors.dense(xi / 16.0), int(yi)) for i, (xi, yi) in enumerate(zip(x, y))]
    df = spark.createDataFrame(rows, ["id", "features", "label"])
    return df.filter("id % 5 != 0"), df.filter("id % 5 = 0")


def parse_args():
    p = argparse.ArgumentParser(description="PyTorch digits with horovod.spark's TorchEstimator")
    p.add_argument("--master", default=None,
                   help="Spark master (default: spark-submit's, else local[2])")
    p.add_argument("--num-proc", type=int, default=2, help="training processes (Spark tasks)")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--lr", type=float, default=0.05, help="learning rate for one process")
    p.add_argument("--batch-size", type=int, default=32, help="batch size per process")
    p.add_argument("--store", default=None,
                   help="store folder (default: a new temporary folder)")
    p.add_argument("--run-id", default="digits", help="the run to create or resume")
    p.add_argument("--min-accuracy", type=float, default=0.9)
    return p.parse_args()


def main():
    args = parse_args()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("horovod_spark_torch_estimator")
    launched_by_spark = "PYSPARK_GATEWAY_PORT" in os.environ or "PYSPARK_SUBMIT_ARGS" in os.environ
    if args.master or not launched_by_spark:
        master = args.master or "local[2]"
        builder = builder.master(master)
        if master.startswith("local"):
            # Executors on this machine run this Python (which has horovod).
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = builder.config("spark.ui.enabled", "false").getOrCreate()
    store = Store.create(args.store or tempfile.mkdtemp(prefix="horovod_store_"))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    estimator = TorchEstimator(
        num_proc=args.num_proc, store=store, model=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9),
        loss=cross_entropy, metrics=[accuracy], feature_cols=["features"],
        label_cols=["label"], validation=0.1, batch_size=args.batch_size, epochs=args.epochs,
        run_id=args.run_id, random_seed=1, partitions_per_process=2)
    try:
        train_df, test_df = digits_frame(spark)
        trained = estimator.fit(train_df)
        predictions = trained.transform(test_df).select("label", "label__output").collect()
    finally:
        spark.stop()
    history = trained.getHistory()
    test_accuracy = float(np.mean([r.label == int(np.argmax(r.label__output.toArray()))
                                   for r in predictions]))
    print(f"{len(history)} epochs; validation loss {history[0]['validation']['loss']:.4f} -> "
          f"{history[-1]['validation']['loss']:.4f}; test accuracy {test_accuracy:.3f}; run "
          f"{trained.getRunId()!r} in {store.get_run_path(trained.getRunId())}")
    if test_accuracy <= args.min_accuracy:
        print(f"FAILED: expected test accuracy > {args.min_accuracy}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
