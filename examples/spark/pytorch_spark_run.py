"""Horovod on Spark: data-parallel training of a small classifier with
horovod.spark.run, every rank a Spark task.

The data is scikit-learn's digits set (1797 images of 8x8 pixels, shipped
inside the package: nothing is downloaded), split 80/20 with a fixed seed.
Each rank trains an MLP on its shard of the training set with
hvd.DistributedOptimizer; rank 0 prints the loss of every epoch; the ranks
then score the test set together and the driver prints the accuracy.

    python examples/spark/pytorch_spark_run.py                  # local[2], 2 ranks
    python examples/spark/pytorch_spark_run.py --master 'local[4]' --num-proc 4
    spark-submit --master spark://host:7077 examples/spark/pytorch_spark_run.py --num-proc 8

Needs pyspark and Java (scripts/setup_spark.sh installs both). Exits non-zero
if the test accuracy is not above --min-accuracy (0.9) or the loss did not
fall.
"""
import argparse
import os
import sys

import horovod.spark


def train(epochs, lr, batch_size, seed):
    """Runs on every rank (in its Spark task); returns its view of the run."""
    import torch
    import torch.nn.functional as F
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    import horovod.torch as hvd

    hvd.init()
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(x / 16.0, y, test_size=0.2,
                                                        random_state=seed)
    shard = slice(hvd.rank(), None, hvd.size())
    x_train = torch.tensor(x_train[shard], dtype=torch.float32)
    y_train = torch.tensor(y_train[shard])
    x_test = torch.tensor(x_test[shard], dtype=torch.float32)
    y_test = torch.tensor(y_test[shard])

    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=lr * hvd.size(), momentum=0.9)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())

    losses = []
    for epoch in range(epochs):
        order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(seed + epoch))
        total, batches = 0.0, 0
        for i in range(0, len(order), batch_size):
            idx = order[i:i + batch_size]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
            loss.backward()
            optimizer.step()
            total, batches = total + loss.item(), batches + 1
        epoch_loss = hvd.allreduce(torch.tensor(total / batches), name="epoch_loss").item()
        losses.append(epoch_loss)
        if hvd.rank() == 0:
            print(f"epoch {epoch}: loss {epoch_loss:.4f}", flush=True)

    with torch.no_grad():
        correct = (model(x_test).argmax(dim=1) == y_test).sum()
    counts = hvd.allreduce(torch.tensor([float(correct), float(len(y_test))]), op=hvd.Sum,
                           name="test_counts")
    return {"rank": hvd.rank(), "losses": losses, "accuracy": (counts[0] / counts[1]).item()}


def parse_args():
    p = argparse.ArgumentParser(description="PyTorch digits on Spark with horovod.spark.run")
    p.add_argument("--master", default=None,
                   help="Spark master (default: spark-submit's, else local[2])")
    p.add_argument("--num-proc", type=int, default=2, help="ranks, one Spark task each")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--lr", type=float, default=0.05, help="learning rate for one rank")
    p.add_argument("--batch-size", type=int, default=32, help="batch size per rank")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--min-accuracy", type=float, default=0.9)
    return p.parse_args()


def main():
    args = parse_args()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("horovod_spark_pytorch_digits")
    launched_by_spark = "PYSPARK_GATEWAY_PORT" in os.environ or "PYSPARK_SUBMIT_ARGS" in os.environ
    if args.master or not launched_by_spark:
        master = args.master or "local[2]"
        builder = builder.master(master)
        if master.startswith("local"):
            # Executors on this machine run this Python (which has horovod).
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = builder.config("spark.ui.enabled", "false").getOrCreate()
    try:
        results = horovod.spark.run(train, args=(args.epochs, args.lr, args.batch_size,
                                                 args.seed), num_proc=args.num_proc)
    finally:
        spark.stop()
    losses, accuracy = results[0]["losses"], results[0]["accuracy"]
    print(f"{len(results)} ranks; loss {losses[0]:.4f} -> {losses[-1]:.4f}; "
          f"test accuracy {accuracy:.3f}")
    if accuracy <= args.min_accuracy or losses[-1] >= losses[0]:
        print(f"FAILED: expected accuracy > {args.min_accuracy} and a falling loss",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
