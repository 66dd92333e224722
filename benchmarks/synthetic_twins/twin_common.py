"""What the synthetic twins share: upstream's command-line flags and result
lines (benchmarks/synthetic.py parses them from every peer alike)."""
import argparse
import timeit

import numpy as np


def parse_args(description, default_model, warmup=True):
    """Upstream's synthetic-benchmark flags (minus --fp16-allreduce and
    --use-adasum), plus --no-communication (the "ideal" row: every process
    trains alone and prints its own rate)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--model", default=default_model)
    p.add_argument("--batch-size", type=int, default=32)
    if warmup:
        p.add_argument("--num-warmup-batches", type=int, default=10)
    p.add_argument("--num-batches-per-iter", type=int, default=10)
    p.add_argument("--num-iters", type=int, default=10)
    p.add_argument("--no-cuda", action="store_true", default=False)
    p.add_argument("--no-communication", action="store_true", default=False)
    return p.parse_args()


def timed_iterations(step, args, device, log):
    """Upstream's timing: --num-warmup-batches untimed steps, then
    --num-iters timed blocks of --num-batches-per-iter steps each; returns
    the blocks' img/sec (per process)."""
    log("Running warmup...")
    timeit.timeit(step, number=args.num_warmup_batches)
    log("Running benchmark...")
    img_secs = []
    for x in range(args.num_iters):
        t = timeit.timeit(step, number=args.num_batches_per_iter)
        img_secs.append(args.batch_size * args.num_batches_per_iter / t)
        log(f"Iter #{x}: {img_secs[-1]:.1f} img/sec per {device}")
    return img_secs


def report(img_secs, rank, size, device, no_communication):
    """Upstream's closing lines from rank 0 ("Img/sec per ...", "Total img/sec
    on N ...: X"); with no_communication every process prints "Rank <i>
    img/sec per <device>: X" instead (the driver sums them)."""
    mean, conf = np.mean(img_secs), 1.96 * np.std(img_secs)
    if no_communication:
        print(f"Rank {rank} img/sec per {device}: {mean:.1f} +-{conf:.1f}", flush=True)
    elif rank == 0:
        print(f"Img/sec per {device}: {mean:.1f} +-{conf:.1f}")
        print(f"Total img/sec on {size} {device}(s): {size * mean:.1f} +-{size * conf:.1f}",
              flush=True)


def report_weights(rank, variables, tf):
    """One line per replica with the sum of its trainable weights: replicas
    that trained on different batches end equal only if their gradients were
    all-reduced, and the driver compares these lines."""
    total = float(sum(tf.reduce_sum(tf.cast(v, tf.float64)) for v in variables))
    print(f"Rank {rank} weights sum: {total:.9e}", flush=True)
