"""horovod.tensorflow above the op layer, eager / tf.function / TF1 graph:
    horovodrun -np N python tests/python/tf_api_scripts/tf_checks.py"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "job_lib"))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

import horovod.tensorflow as hvd  # noqa: E402
from check_harness import check, close, main  # noqa: E402


def data(rank, n=4, d=3):
    """Rank-dependent inputs: every rank can compute every rank's data."""
    return np.arange(n * d, dtype=np.float32).reshape(n, d) / 10.0 + rank


def local_grad(w0, rank):
    """d/dw of sum((x @ w)^2) for rank's data (numpy reference)."""
    x = data(rank)
    return 2 * x.T @ (x @ w0)


W0 = np.array([[0.5], [-0.25], [1.0]], np.float32)


def expected_avg():
    return np.mean([local_grad(W0, r) for r in range(hvd.size())], axis=0)


def tape_grad(w=None, **kwargs):
    w = tf.Variable(W0) if w is None else w
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.matmul(data(hvd.rank()), w) ** 2)
    return hvd.DistributedGradientTape(tape, **kwargs).gradient(loss, [w])[0]


@check
def tape_gradient_is_average_eager():
    close(tape_grad(), expected_avg(), "eager tape gradient")


@check
def tape_gradient_is_average_in_tf_function():
    w = tf.Variable(W0)
    close(tf.function(lambda: tape_grad(w))(), expected_avg(), "tf.function tape gradient")


@check
def tape_options_keep_the_average():
    # predivide, explicit groups, compression: same average (fp16 rounds).
    close(tape_grad(gradient_predivide_factor=2.0), expected_avg(), "predivide")
    close(tape_grad(groups=1), expected_avg(), "groups=1")
    close(tape_grad(compression=hvd.Compression.fp16), expected_avg(), "fp16", tol=2e-2)
    close(tape_grad(compression=hvd.Compression.bf16), expected_avg(), "bf16", tol=5e-2)
    close(tape_grad(op=hvd.Sum), expected_avg() * hvd.size(), "op=Sum")
    try:
        tape_grad(op=hvd.Sum, gradient_predivide_factor=2.0)
    except ValueError as e:
        assert "gradient_predivide_factor" in str(e)
    else:
        raise AssertionError("predivide with op=Sum must raise ValueError")


@check
def many_variables_in_automatic_buckets():
    ws = [tf.Variable(np.full([3], i, np.float32)) for i in range(7)]
    with tf.GradientTape() as tape:
        loss = tf.add_n([tf.reduce_sum(w * w) for w in ws]) * (hvd.rank() + 1)
    grads = hvd.DistributedGradientTape(tape).gradient(loss, ws)
    factor = np.mean([r + 1 for r in range(hvd.size())])
    for i, g in enumerate(grads):
        close(g, np.full([3], 2.0 * i * factor), f"bucketed gradient {i}")


@check
def sparse_embedding_gradients():
    emb = keras.layers.Embedding(10, 2, embeddings_initializer="ones")
    emb.build((None,))
    ids = np.array([hvd.rank() % 10, 9])

    def grads(sparse_as_dense):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(emb(ids)) * (hvd.rank() + 1)
        g = hvd.DistributedGradientTape(tape, sparse_as_dense=sparse_as_dense).gradient(
            loss, emb.trainable_variables)[0]
        return g

    expected = np.zeros([10, 2])
    for r in range(hvd.size()):
        expected[r % 10] += (r + 1) / hvd.size()
        expected[9] += (r + 1) / hvd.size()
    sparse = grads(False)
    assert hvd.size() == 1 or isinstance(sparse, tf.IndexedSlices), type(sparse)
    close(tf.convert_to_tensor(sparse), expected, "IndexedSlices gradient")
    close(grads(True), expected, "sparse_as_dense gradient")


def shared_and_local_loss():
    """Two bias-free Dense(1) layers on this rank's data and a tape over the
    sum of both: (shared, local, tape, loss, own, avg), own being this rank's
    kernel gradient and avg its mean over the ranks."""
    shared, local = keras.layers.Dense(1, use_bias=False), keras.layers.Dense(1, use_bias=False)
    x = tf.constant(data(hvd.rank())[:, :2])
    shared.build((None, 2))
    local.build((None, 2))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(shared(x) + local(x))
    own = data(hvd.rank())[:, :2].sum(0).reshape(2, 1)
    avg = np.mean([data(r)[:, :2].sum(0) for r in range(hvd.size())], axis=0).reshape(2, 1)
    return shared, local, tape, loss, own, avg


@check
def partial_tape_keeps_local_layers_local():
    shared, local, tape, loss, own, avg = shared_and_local_loss()
    tape = hvd.PartialDistributedGradientTape(tape, local_layers=[local])
    g_shared, g_local = tape.gradient(loss, [shared.kernel, local.kernel])
    close(g_shared, avg, "shared layer gradient")
    close(g_local, own / hvd.size(), "local layer gradient (scale_local_gradients)")


@check
def partial_tape_local_and_global_gradients():
    # Upstream's split of gradient(): (source, gradient) pairs, local ones first.
    shared, local, tape, loss, own, avg = shared_and_local_loss()
    tape = hvd.PartialDistributedGradientTape(tape, local_layers=local)
    local_pairs, global_pairs = tape.get_local_and_global_gradients(
        loss, [shared.kernel, local.kernel])
    assert [v is local.kernel for v, _ in local_pairs] == [True], local_pairs
    assert [v is shared.kernel for v, _ in global_pairs] == [True], global_pairs
    close(global_pairs[0][1], avg, "global (reduced) gradient")
    close(local_pairs[0][1], own / hvd.size(), "local gradient")


@check
def upstream_util_module_surface():
    # horovod.tensorflow.util (upstream's tests import _executing_eagerly from it).
    from horovod.tensorflow.util import (_cache, _executing_eagerly, _make_subgraph,
                                         refs_to_vars, vars_to_refs)
    assert hvd.util._executing_eagerly is _executing_eagerly
    assert hvd._executing_eagerly is _executing_eagerly
    assert _executing_eagerly() is True
    assert not _make_subgraph(lambda: tf.constant(_executing_eagerly()))().numpy()
    with tf.Graph().as_default():
        assert _executing_eagerly() is False
    calls = []

    @_cache
    def square(n):
        calls.append(n)
        return n * n
    assert (square(3), square(3), square(4)) == (9, 9, 16) and calls == [3, 4], calls
    v, k = tf.Variable(1.0), keras.Variable(2.0)
    refs = vars_to_refs([v, [k, v]])
    assert refs == vars_to_refs([v, [k, v]]) and hash(refs) == hash(vars_to_refs([v, [k, v]]))
    back = refs_to_vars(refs)
    assert back[0] is v and back[1][1] is v, back
    assert back[1][0] is k.value, "a Keras variable is referenced through its tf.Variable"


@check
def public_allreduce_and_grouped():
    x = tf.constant(data(hvd.rank()))
    avg = np.mean([data(r) for r in range(hvd.size())], axis=0)
    close(hvd.allreduce(x), avg, "allreduce")
    close(hvd.allreduce(x, average=False), avg * hvd.size(), "allreduce(average=False)")
    close(hvd.allreduce(x, op=hvd.Sum, prescale_factor=0.5), avg * hvd.size() * 0.5, "prescale")
    a, b = hvd.grouped_allreduce([x, 2 * x], compression=hvd.Compression.fp16)
    close(a, avg, "grouped 0", tol=1e-2)
    close(b, 2 * avg, "grouped 1", tol=2e-2)
    try:
        hvd.allreduce(x, op=hvd.Sum, average=True)
    except ValueError:
        pass
    else:
        raise AssertionError("op and average together must raise ValueError")


@check
def broadcast_variables_and_objects():
    v = tf.Variable(data(hvd.rank()))
    k = keras.Variable(np.full([2], float(hvd.rank())))
    hvd.broadcast_variables([v, k], root_rank=0)
    close(v, data(0), "broadcast tf.Variable")
    close(k, [0.0, 0.0], "broadcast keras.Variable")
    root = hvd.size() - 1
    obj = hvd.broadcast_object({"rank": hvd.rank(), "f": lambda q: q + 1}, root_rank=root)
    assert obj["rank"] == root and obj["f"](1) == 2, obj
    assert hvd.allgather_object(("r", hvd.rank())) == [("r", r) for r in range(hvd.size())]
    fn = hvd.broadcast_object_fn(root_rank=0, name="fn")
    assert fn(hvd.rank() * 10) == 0 and fn(hvd.rank() + 5) == 5
    try:
        hvd.broadcast_global_variables(0)
    except RuntimeError as e:
        assert "broadcast_variables" in str(e)
    else:
        raise AssertionError("broadcast_global_variables in eager mode must raise")


@check
def sync_batch_norm_uses_global_statistics():
    layer = hvd.SyncBatchNormalization(momentum=0.0, epsilon=0.0, center=False, scale=False)
    x = data(hvd.rank())
    y = layer(tf.constant(x), training=True)
    everything = np.concatenate([data(r) for r in range(hvd.size())])
    mean, var = everything.mean(0), everything.var(0)
    close(y, (x - mean) / np.sqrt(var), "normalised by the global statistics", tol=1e-4)
    close(layer.moving_mean, mean, "moving mean")
    # Upstream's `fused` argument: False accepted (Keras 3 has no fused kernel), else ValueError.
    hvd.SyncBatchNormalization(fused=False, axis=1)
    for fused in (True, None):
        try:
            hvd.SyncBatchNormalization(fused=fused)
        except ValueError as e:
            assert "fused" in str(e), e
        else:
            raise AssertionError(f"SyncBatchNormalization(fused={fused}) must raise ValueError")


# ---------------------------------------------------------------- TF1 graph mode


def tf1_train(optimizer_kwargs, steps, feed_rank_data=True):
    """Runs `steps` Adagrad steps of a TF1 graph in a Session; returns w."""
    v1 = tf.compat.v1
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 3])
        w = v1.get_variable("w", initializer=W0 + hvd.rank())   # differs until broadcast
        loss = tf.reduce_sum(tf.matmul(x, w) ** 2)
        opt = hvd.DistributedOptimizer(v1.train.GradientDescentOptimizer(0.01),
                                       **optimizer_kwargs)
        step = v1.train.get_or_create_global_step()
        train = opt.minimize(loss, global_step=step)
        hooks = [hvd.BroadcastGlobalVariablesHook(0)]
        with v1.train.MonitoredTrainingSession(hooks=hooks) as sess:
            for _ in range(steps):
                sess.run(train, {x: data(hvd.rank())})
            return sess.run([w, step])


def reference_sgd(steps, passes=1, average=False):
    """Single-process SGD on the rank-averaged gradient, applied every `passes` steps."""
    w = W0.copy()
    acc = np.zeros_like(w)
    for i in range(steps):
        acc += np.mean([local_grad(w, r) for r in range(hvd.size())], axis=0)
        if (i + 1) % passes == 0:
            w = w - 0.01 * (acc / passes if average else acc)
            acc[:] = 0
    return w


@check
def tf1_distributed_optimizer_in_monitored_session():
    w, step = tf1_train({}, 3)
    close(w, reference_sgd(3), "TF1 weights after 3 steps", tol=1e-4)
    assert step == 3, step


@check
def tf1_backward_passes_per_step():
    w, step = tf1_train({"backward_passes_per_step": 2}, 4)
    close(w, reference_sgd(4, passes=2), "aggregated (summed) weights", tol=1e-4)
    assert step == 4, step          # the global step advances on every step
    w, _ = tf1_train({"backward_passes_per_step": 2, "average_aggregated_gradients": True}, 4)
    close(w, reference_sgd(4, passes=2, average=True), "aggregated (averaged) weights", tol=1e-4)


@check
def tf1_objects_and_errors():
    v1 = tf.compat.v1
    with tf.Graph().as_default(), v1.Session() as sess:
        assert hvd.broadcast_object(hvd.rank() + 3, root_rank=0, session=sess) == 3
        assert hvd.allgather_object(hvd.rank(), session=sess) == list(range(hvd.size()))
    try:
        hvd.DistributedOptimizer(object())
    except ValueError as e:
        assert "optimizer" in str(e)
    else:
        raise AssertionError("a non-optimizer must be refused")
    try:
        hvd.DistributedOptimizer(v1.train.AdamOptimizer(), backward_passes_per_step=2)
    except ValueError as e:
        assert "eager" in str(e)
    else:
        raise AssertionError("eager TF1 optimizer with backward_passes_per_step>1 must raise")


if __name__ == "__main__":
    sys.exit(main(hvd))
