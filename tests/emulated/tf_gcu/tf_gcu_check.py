"""Checks of the emulated TF PluggableDevice "GCU" (libhvda_emu_tf_gcu.so)
from inside one TensorFlow process; tests/python/test_emulated_tf_device.py
runs it under a hard timeout.

Usage: python tf_gcu_check.py PLUGIN [CHECK...]   (no CHECK: all)

Loads PLUGIN before anything touches TF's devices, runs each check and
prints "PASS name" or "FAIL name" plus the traceback; exits 1 when one
failed. The copy counters come from the engine the plugin loaded,
libhvda_emu_core.so next to it (one instance per process). The process's
device count is HVDA_EMU_DEVICE_COUNT (default 4).
"""
import ctypes
import os
import sys
import traceback

import numpy as np

PLUGIN = os.path.abspath(sys.argv[1])
SELECTED = set(sys.argv[2:])

import tensorflow as tf  # noqa: E402  (after the argument check, as a script)


def load_plugin(path):
    # tf.load_pluggable_device_library is not exported by every TF 2.x
    # (2.21 has only the internal function).
    load = getattr(tf, "load_pluggable_device_library", None)
    if load is None:
        from tensorflow.python.framework import load_library
        load = load_library.load_pluggable_device_library
    load(path)


load_plugin(PLUGIN)
CORE = ctypes.CDLL(os.path.join(os.path.dirname(PLUGIN), "libhvda_emu_core.so"))
CORE.hvda_emu_copy_counts.argtypes = [ctypes.POINTER(ctypes.c_uint64)]
CORE.hvda_emu_copy_counts.restype = None
GCU = "/device:GCU:0"
RNG = np.random.default_rng(7)


def copy_counts():
    """{h2d_calls, h2d_bytes, d2h_calls, d2h_bytes} so far in this process."""
    out = (ctypes.c_uint64 * 4)()
    CORE.hvda_emu_copy_counts(out)
    return dict(zip(["h2d_calls", "h2d_bytes", "d2h_calls", "d2h_bytes"], out))


def delta(before, after):
    return {k: after[k] - before[k] for k in before}


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def on_gcu(t):
    assert t.device.endswith("device:GCU:0"), t.device


def close(got, want):
    got = got.numpy() if hasattr(got, "numpy") else got
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def check_devices():
    want = int(os.environ.get("HVDA_EMU_DEVICE_COUNT", "4"))
    physical = tf.config.list_physical_devices("GCU")
    assert len(physical) == want, physical
    logical = [d.name for d in tf.config.list_logical_devices("GCU")]
    assert logical[0].endswith("device:GCU:0"), logical


def check_matmul():
    a, b = rand(5, 7), rand(7, 3)
    with tf.device(GCU):
        for ta in (False, True):
            for tb in (False, True):
                x = tf.constant(a.T.copy() if ta else a)
                y = tf.constant(b.T.copy() if tb else b)
                z = tf.matmul(x, y, transpose_a=ta, transpose_b=tb)
                on_gcu(z)
                close(z, a @ b)


def check_elementwise():
    a, b = rand(4, 3), rand(4, 3)
    row = rand(3)
    with tf.device(GCU):
        x, y, r = tf.constant(a), tf.constant(b), tf.constant(row)
        cases = [
            (tf.add(x, y), a + b), (tf.subtract(x, y), a - b), (tf.multiply(x, y), a * b),
            (x + 2.5, a + np.float32(2.5)), (3.0 - x, np.float32(3.0) - a),
            (x * -0.5, a * np.float32(-0.5)),
            (tf.add(x, r), a + row), (tf.subtract(r, x), row - a),
        ]
        for got, want in cases:
            on_gcu(got)
            close(got, want)


def check_zero_size():
    with tf.device(GCU):
        empty_rows = tf.matmul(tf.constant(np.zeros((0, 3), np.float32)), tf.constant(rand(3, 4)))
        no_inner = tf.matmul(tf.constant(np.zeros((2, 0), np.float32)),
                             tf.constant(np.zeros((0, 4), np.float32)))
        empty_sum = tf.constant(np.zeros((0, 3), np.float32)) + 1.0
    for t in (empty_rows, no_inner, empty_sum):
        on_gcu(t)
    close(empty_rows, np.zeros((0, 4), np.float32))
    close(no_inner, np.zeros((2, 4), np.float32))  # k = 0: the product is all zeros
    close(empty_sum, np.zeros((0, 3), np.float32))


def check_gradient():
    """tape.gradient of x @ w with output_gradients: both gradient MatMuls
    (transpose_a for w, transpose_b for x) run on the GCU."""
    xa, wa, dya = rand(4, 3), rand(3, 2), rand(4, 2)
    with tf.device(GCU):
        w = tf.Variable(wa)
        x = tf.constant(xa)
        dy = tf.constant(dya)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = tf.matmul(x, w)
        gw = tape.gradient(y, w, output_gradients=dy)
        gx = tape.gradient(y, x, output_gradients=dy)
    assert w.device.endswith("device:GCU:0"), w.device
    for t in (y, gw, gx):
        on_gcu(t)
    close(gw, xa.T @ dya)
    close(gx, dya @ wa.T)


def check_copy_counters():
    """A tensor crossing host->device or device->host moves the counters by
    exactly its bytes; device-only ops move none."""
    a = rand(4, 6)
    before = copy_counts()
    with tf.device(GCU):
        x = tf.constant(a)
    on_gcu(x)
    moved = delta(before, copy_counts())
    assert moved == {"h2d_calls": 1, "h2d_bytes": a.nbytes, "d2h_calls": 0, "d2h_bytes": 0}, moved
    before = copy_counts()
    with tf.device(GCU):
        z = tf.matmul(x, x, transpose_b=True)
        z = z * z - z + z
    on_gcu(z)
    moved = delta(before, copy_counts())
    assert not any(moved.values()), f"a device-only computation copied: {moved}"
    before = copy_counts()
    host = z.numpy()
    moved = delta(before, copy_counts())
    want_moved = {"h2d_calls": 0, "h2d_bytes": 0, "d2h_calls": 1, "d2h_bytes": host.nbytes}
    assert moved == want_moved, moved
    want = a @ a.T
    np.testing.assert_allclose(host, want * want - want + want, rtol=1e-4, atol=1e-4)


def check_variable_update():
    """var.assign(var - x) updates a GCU variable on the GCU; assign_sub is
    refused with an error (not a crash: see variable_kernels.cc)."""
    wa, ga = rand(3, 2), rand(3, 2)
    with tf.device(GCU):
        w = tf.Variable(wa)
        g = tf.constant(ga)
        w.assign(w - 0.5 * g)
        try:
            w.assign_sub(g)
        except tf.errors.UnimplementedError as e:
            assert "assign(var - x)" in str(e), e
        else:
            raise AssertionError("assign_sub on a GCU variable did not fail")
    close(w.read_value(), wa - np.float32(0.5) * ga)


def check_tf_function():
    a, b = rand(2, 3), rand(3, 5)

    @tf.function
    def step(x, y):
        return tf.matmul(x, y) * 2.0 + 1.0

    with tf.device(GCU):
        z = step(tf.constant(a), tf.constant(b))
    on_gcu(z)
    close(z, (a @ b) * 2 + 1)


def check_native_stream_symbol():
    plugin = ctypes.CDLL(PLUGIN)
    fn = plugin.hvda_tf_gcu_native_stream
    fn.argtypes = [ctypes.c_void_p]
    fn.restype = ctypes.c_void_p
    assert fn(None) is None


CHECKS = {name[len("check_"):]: fn for name, fn in list(globals().items())
          if name.startswith("check_")}


def main():
    unknown = SELECTED - set(CHECKS)
    if unknown:
        print(f"unknown checks: {sorted(unknown)}", flush=True)
        return 2
    failed = 0
    for name, fn in CHECKS.items():
        if SELECTED and name not in SELECTED:
            continue
        try:
            fn()
            print(f"PASS {name}", flush=True)
        except Exception:  # noqa: BLE001 - report every check
            failed += 1
            print(f"FAIL {name}\n{traceback.format_exc()}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
