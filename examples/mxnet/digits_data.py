"""Data for the MXNet examples: MNIST from its idx files when a folder is
given, else synthetic digits-like images (nothing is downloaded).

Synthetic images: 10 classes, each a fixed random pattern of strokes
(seeded, so every rank and every run sees the same classes), drawn with a
random shift of up to side // 14 pixels (at least 1) and strong Gaussian noise; pixel values are uint8
like MNIST's. An MLP separates them well but not instantly.
"""
import gzip
import os

import numpy as np

MNIST_FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
               "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}


def _read_idx(path):
    """An idx file (optionally .gz) as a numpy array."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def _find(data_dir, name):
    for candidate in (name, name + ".gz"):
        path = os.path.join(data_dir, candidate)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"{name}(.gz) not found in {data_dir}")


def load_mnist(data_dir, split):
    """(images uint8 [n, 28, 28], labels int [n]) of MNIST's idx files."""
    images, labels = MNIST_FILES[split]
    return _read_idx(_find(data_dir, images)), _read_idx(_find(data_dir, labels)).astype(np.int64)


def synthetic_digits(n, side=28, seed=0, classes=10):
    """(images uint8 [n, side, side], labels int [n]); image i depends only
    on (seed, i), the class patterns only on `side`."""
    pad = max(2, side // 7)  # shifts of up to 2 pixels at 28x28, 1 at 8x8
    patterns = np.zeros((classes, side + pad, side + pad), np.float32)
    prng = np.random.default_rng(1234 + side)
    for c in range(classes):
        for _ in range(3):  # three strokes per class
            r0, c0, r1, c1 = prng.integers(pad // 2, side + pad // 2, size=4)
            steps = 2 * side
            rows = np.linspace(r0, r1, steps).round().astype(int)
            cols = np.linspace(c0, c1, steps).round().astype(int)
            patterns[c, rows, cols] = 1.0
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, size=n)
    shifts = rng.integers(0, pad + 1, size=(n, 2))
    noise = rng.normal(0.0, 0.5, size=(n, side, side)).astype(np.float32)
    images = np.empty((n, side, side), np.float32)
    for i in range(n):
        dr, dc = shifts[i]
        images[i] = patterns[labels[i], dr:dr + side, dc:dc + side]
    images = np.clip(images + noise, 0.0, 1.0)
    return (images * 255).astype(np.uint8), labels.astype(np.int64)


def load(data_dir=None, split="train", n=None, side=28, seed=0):
    """MNIST's split from data_dir, or n synthetic images (train and test
    use different seeds)."""
    if data_dir:
        return load_mnist(data_dir, split)
    default_n = 10000 if split == "train" else 1000
    return synthetic_digits(n or default_n, side=side, seed=seed + (0 if split == "train" else 1))


def shard(images, labels, rank, size):
    """Every size-th sample from `rank`: this rank's part of an epoch."""
    return images[rank::size], labels[rank::size]
