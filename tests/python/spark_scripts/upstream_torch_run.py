"""A Horovod-on-Spark script as written for upstream Horovod: horovod.spark.run
trains a small torch model with hvd.DistributedOptimizer on random data.
Kept as upstream users write it (no horovod_accel names); the Spark master
comes from outside, as with spark-submit:

    PYSPARK_SUBMIT_ARGS="--master local[2] pyspark-shell" python upstream_torch_run.py
    spark-submit --master local[2] upstream_torch_run.py

Prints one line `LOSSES <json>` (the average loss of every epoch, per rank).
"""
import argparse
import json

from pyspark import SparkConf
from pyspark.sql import SparkSession

import horovod.spark


def train(epochs, lr, batch_size):
    import torch
    import torch.nn.functional as F

    import horovod.torch as hvd

    hvd.init()
    torch.manual_seed(1234)
    # Every rank builds the same data set and trains on its own shard.
    x = torch.randn(1024, 16)
    true_w = torch.randn(16, 1)
    y = x @ true_w + 0.05 * torch.randn(1024, 1)
    x, y = x[hvd.rank()::hvd.size()], y[hvd.rank()::hvd.size()]

    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=lr * hvd.size(), momentum=0.9)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())

    losses = []
    for epoch in range(epochs):
        total = 0.0
        for i in range(0, len(x), batch_size):
            optimizer.zero_grad()
            loss = F.mse_loss(model(x[i:i + batch_size]), y[i:i + batch_size])
            loss.backward()
            optimizer.step()
            total += loss.item()
        avg = hvd.allreduce(torch.tensor(total / (len(x) / batch_size)), name="epoch_loss")
        losses.append(avg.item())
        if hvd.rank() == 0:
            print("epoch %d: loss %.4f" % (epoch, avg.item()))
    return losses


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--num-proc", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    conf = SparkConf().setAppName("horovod_spark_run_torch")
    spark = SparkSession.builder.config(conf=conf).getOrCreate()
    losses = horovod.spark.run(train, args=(args.epochs, args.lr, args.batch_size),
                               num_proc=args.num_proc, verbose=2)
    print("LOSSES " + json.dumps(losses))
    spark.stop()


if __name__ == "__main__":
    main()
