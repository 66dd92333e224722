"""horovod.spark's estimators (horovod_accel/spark/{common,torch,keras}) on
real Spark.

One local[2] SparkSession serves the module (its SparkContext runs in this
process, the Spark driver); the example runs in its own process with its
own session. Data: scikit-learn's digits (1797 8x8 images, bundled), 20% of
it held out for accuracy, as a DataFrame of a pyspark.ml vector column and
an integer label. Each framework's two fits (epochs 2, then 4 with the same
run_id) run once, in module fixtures, and several tests read them. Every
test and fixture has a hard timeout. Skipped without pyspark, Java,
pyarrow, fsspec, torch or scikit-learn (scripts/setup_spark.sh installs the
Spark part); the Keras tests also without TensorFlow.
"""
import io
import json
import os
import sys

import numpy as np
import pytest

from launch_util import REPO, run

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "spark_scripts")
sys.path.insert(0, SCRIPTS)
import estimator_fns  # noqa: E402
from spark_testing import deadline, hard_timeout, skip_reason, stop_jvm, timeout  # noqa: E402,F401

_SKIP = skip_reason("pyarrow", "fsspec", "torch", "sklearn")
pytestmark = pytest.mark.skipif(_SKIP is not None, reason=str(_SKIP))
needs_tf = pytest.mark.skipif(skip_reason("tensorflow") is not None,
                              reason="TensorFlow (Keras 3 backend) is not installed")
# Keras' own model.save trips numpy 2's copy-keyword DeprecationWarning.
keras_save_warning = pytest.mark.filterwarnings(
    "ignore:__array__ implementation doesn't accept a copy keyword:DeprecationWarning")

NUM_PROC = 2
FIT_TIMEOUT_S = 240


@pytest.fixture(scope="module")
def spark():
    env = {"PYSPARK_PYTHON": sys.executable, "OMP_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "2",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    with deadline(120, "starting the SparkSession"):
        from pyspark.sql import SparkSession  # noqa: PLC0415
        session = (SparkSession.builder.master(f"local[{NUM_PROC}]")
                   .appName("hvda-test-spark-estimators")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   # no pandas here: plain (not Arrow) Python UDFs, without a warning
                   .config("spark.sql.execution.pythonUDF.arrow.enabled", "false")
                   .getOrCreate())
        session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
        stop_jvm()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def digits(spark):
    """(train_df, test_df): every fifth image held out."""
    from pyspark.ml.linalg import Vectors  # noqa: PLC0415
    from sklearn.datasets import load_digits  # noqa: PLC0415
    x, y = load_digits(return_X_y=True)
    rows = [(i, Vectors.dense(xi / 16.0), int(yi)) for i, (xi, yi) in enumerate(zip(x, y))]
    df = spark.createDataFrame(rows, ["id", "features", "label"])
    return df.filter("id % 5 != 0"), df.filter("id % 5 = 0")


def _accuracy(model, test_df):
    """Accuracy of transform()'s predictions; asserts the column's type."""
    from pyspark.ml.linalg import VectorUDT  # noqa: PLC0415
    out = model.transform(test_df)
    assert out.columns == test_df.columns + ["label__output"]
    assert isinstance(out.schema["label__output"].dataType, VectorUDT)
    rows = out.select("label", "label__output").collect()
    assert len(rows) == test_df.count()
    return float(np.mean([r.label == int(np.argmax(r.label__output.toArray())) for r in rows]))


class NoTraining:
    """A backend that fails the test if the estimator trains."""

    def num_processes(self):
        return NUM_PROC

    def run(self, fn, args=(), kwargs=None, env=None):
        raise AssertionError("the estimator started training, but its run was complete")


# ------------------------------------------------------------------ pure parts

def test_shards_are_disjoint_cover_every_row_and_balance():
    from horovod_accel.spark.common import shard  # noqa: PLC0415
    for sizes in ([100], [7, 0, 13, 1, 30], [1] * 9, [50, 3]):
        groups = [shard.RowGroup(f"f{i}", 0, n) for i, n in enumerate(sizes) if n]
        offsets = np.cumsum([0] + [g.num_rows for g in groups])
        for size in (1, 2, 3, 5):
            rows = []
            for rank in range(size):
                rank_rows = [int(offsets[groups.index(s.group)]) + r
                             for s in shard.plan(groups, rank, size)
                             for r in range(s.start, s.stop)]
                assert len(rank_rows) == shard.shard_sizes(sum(sizes), size)[rank]
                rows += rank_rows
            assert rows == list(range(sum(sizes))), (sizes, size)
            counts = shard.shard_sizes(sum(sizes), size)
            assert max(counts) - min(counts) <= 1


def test_every_rank_takes_the_same_number_of_steps():
    from horovod_accel.spark.common import shard  # noqa: PLC0415
    for total, size, batch in ((1437, 2, 32), (64, 2, 32), (65, 2, 32), (10, 3, 4), (5, 5, 8)):
        counts = shard.shard_sizes(total, size)
        plans = [shard.epoch_batch_sizes(n, min(counts), batch) for n in counts]
        assert len({len(p) for p in plans}) == 1
        assert [sum(p) for p in plans] == counts          # one pass over each shard
        assert all(0 < b <= batch + 1 for p in plans for b in p)


def test_store_paths_and_files(tmp_path):
    from horovod.spark.common.store import FilesystemStore, LocalStore, Store  # noqa: PLC0415
    store = Store.create(str(tmp_path / "store"))
    assert isinstance(store, FilesystemStore)
    prefix = (tmp_path / "store").as_uri()
    assert store.prefix_path == prefix
    assert store.get_train_data_path(3) == prefix + "/intermediate_train_data.3"
    assert store.get_val_data_path() == prefix + "/intermediate_val_data"
    assert store.get_test_data_path(0) == prefix + "/intermediate_test_data.0"
    assert store.get_run_path("r") == prefix + "/runs/r"
    assert store.get_checkpoint_path("r") == prefix + "/runs/r"
    assert store.get_logs_path("r") == prefix + "/runs/r/logs"
    assert store.get_checkpoint_filename() == "checkpoint"
    remote = store.to_remote("r", 2)
    assert (remote.train_data_path, remote.logs_path) == (prefix + "/intermediate_train_data.2",
                                                          prefix + "/runs/r/logs")
    path = store.get_checkpoint_path("r") + "/checkpoint"
    store.write_bytes(path, b"one")
    store.write_bytes(path, b"two")
    assert store.read(path) == b"two"
    assert os.listdir(tmp_path / "store" / "runs" / "r") == ["checkpoint"]   # no temp files left
    with store.get_local_output_dir_fn("r")() as local:
        os.makedirs(os.path.join(local, "logs"))
        with open(os.path.join(local, "logs", "a.txt"), "w") as f:
            f.write("log")
        store.sync_fn("r")(local)
    assert (tmp_path / "store" / "runs" / "r" / "logs" / "a.txt").read_text() == "log"
    assert LocalStore(str(tmp_path / "l")).get_runs_path() == (tmp_path / "l").as_uri() + "/runs"
    assert Store.create(str(tmp_path / "n"), save_runs=False).get_checkpoint_path("r") is None


def test_unwritable_store_is_a_clear_error(tmp_path):
    from horovod.spark.common.store import Store  # noqa: PLC0415
    (tmp_path / "file").write_text("not a folder")
    store = Store.create(str(tmp_path / "file" / "store"))
    with pytest.raises(ValueError, match=r"prefix_path .*file/store is not writable"):
        store.check_writable()


# ------------------------------------------------------------------ data in the store

def test_parquet_in_the_store_and_shards_per_rank(spark, digits, tmp_path):
    """The DataFrame lands as Parquet at the store's paths; at 3 ranks the
    shards are disjoint and cover every row, shuffled or not."""
    from horovod.spark.common.store import Store  # noqa: PLC0415
    from horovod_accel.spark.common import columns, dataset, reader  # noqa: PLC0415
    train_df, _ = digits
    store = Store.create(str(tmp_path / "store"))
    infos = columns.describe(train_df, ["id", "features"], ["label"])
    assert (infos["features"].kind, infos["features"].size) == ("vector", 64)
    with dataset.prepare(store, train_df, infos, 0.25, 3, 2, seed=5) as data:
        assert data.train_path == store.get_train_data_path(data.idx)
        files = os.listdir(store.get_localized_path(data.train_path))
        # 3 processes x 2 partitions, 75% of them for the training rows
        assert "_SUCCESS" in files and sum(f.endswith(".parquet") for f in files) == 4
        assert data.train_rows + data.val_rows == train_df.count()
        for path, rows in ((data.train_path, data.train_rows), (data.val_path, data.val_rows)):
            for buffer_rows in (0, 50):
                ids = []
                for rank in range(3):
                    r = reader.ShardReader(store, path, infos, rank, 3, buffer_rows, seed=1)
                    chunk = reader.Batches(r.passes()).take(r.num_rows)
                    assert chunk["features"].shape == (r.num_rows, 64)
                    ids.append(set(chunk["id"].tolist()))
                assert sum(len(s) for s in ids) == rows
                assert len(set().union(*ids)) == rows                      # disjoint
        all_ids = {r.id for r in train_df.select("id").collect()}
        train_ids = set(store.get_parquet_dataset(data.train_path).to_table(
            columns=["id"]).column("id").to_pylist())
        val_ids = set(store.get_parquet_dataset(data.val_path).to_table(
            columns=["id"]).column("id").to_pylist())
        assert train_ids | val_ids == all_ids and not train_ids & val_ids
    # A validation column: its true rows validate, and it is not stored.
    marked = train_df.withColumn("is_val", train_df.id % 10 == 1)
    with dataset.prepare(store, marked, infos, "is_val", 2, 1) as data:
        val = store.get_parquet_dataset(data.val_path).to_table()
        assert val.column_names == ["id", "features", "label"]
        assert sorted(val.column("id").to_pylist()) == sorted(
            r.id for r in marked.filter("is_val").select("id").collect())
        assert data.train_rows == marked.filter("not is_val").count()


def test_wrong_params_are_clear_errors_before_any_data_is_written(spark, digits, tmp_path):
    import torch  # noqa: PLC0415
    from pyspark.sql import functions as F  # noqa: PLC0415

    from horovod.spark.common.store import Store  # noqa: PLC0415
    from horovod.spark.torch import TorchEstimator  # noqa: PLC0415
    train_df, _ = digits
    store = Store.create(str(tmp_path / "store"))
    model = torch.nn.Linear(64, 10)

    def estimator(**overrides):
        params = dict(num_proc=NUM_PROC, model=model, store=store,
                      optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                      loss=estimator_fns.cross_entropy, feature_cols=["features"],
                      label_cols=["label"])
        params.update(overrides)
        return TorchEstimator(**params)

    cases = [
        (dict(feature_cols=None), "feature_cols is required"),
        (dict(feature_cols=["pixels"]), r"Feature columns \['pixels'\] are not in the DataFrame"),
        (dict(feature_cols=["name"]), "Feature column 'name' has type string"),
        (dict(model=None), "model is required"),
        (dict(optimizer=torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=1)),
         "the optimizer's parameters are not the model's"),
        (dict(store=Store.create(str(tmp_path / "file" / "s"))), "is not writable"),
        (dict(validation=1.5), r"validation=1.5 must be a fraction in \[0, 1\)"),
        (dict(batch_size=0), "batch_size must be a positive integer"),
        (dict(backend=NoTraining()), 'At most one of parameters "backend" and "num_proc"'),
        (dict(transformation_fn=lambda row: row), "transformation_fn is not supported"),
    ]
    (tmp_path / "file").write_text("")
    df = train_df.withColumn("name", F.lit("seven"))
    for overrides, message in cases:
        with pytest.raises(ValueError, match=message):
            estimator(**overrides).fit(df)
    assert not os.path.exists(tmp_path / "store" / "intermediate_train_data.0")


def test_transform_output_types(spark):
    """A one-value output takes its label's type (rounded for integers), a
    wider one becomes a DenseVector; an existing column is not overwritten."""
    from pyspark.ml.linalg import DenseVector, VectorUDT  # noqa: PLC0415
    from pyspark.sql import types as T  # noqa: PLC0415

    from horovod_accel.spark.common import columns, transform  # noqa: PLC0415

    class Predictor:   # defined here, so it travels to the Spark tasks by value
        def __call__(self, features):
            x = features[0]
            return [x + 0.4, x / 2, np.stack([x, -x], axis=1)]

    df = spark.createDataFrame([(float(i), i, 0.5 * i) for i in range(600)], ["x", "n", "r"])
    infos = columns.describe(df, ["x"], ["n", "r"])
    out = transform.predict(df, Predictor(), ["x"], ["n", "r", "r"], ["n_out", "r_out", "v_out"],
                            infos)
    types = {f.name: f.dataType for f in out.schema.fields}
    assert (types["n_out"], types["r_out"]) == (T.LongType(), T.DoubleType())
    assert isinstance(types["v_out"], VectorUDT)
    rows = sorted(out.collect(), key=lambda r: r.x)
    assert len(rows) == 600
    assert [(r.n_out, r.r_out, r.v_out) for r in rows[:2]] == [
        (0, 0.0, DenseVector([0.0, -0.0])), (1, 0.5, DenseVector([1.0, -1.0]))]
    with pytest.raises(ValueError, match=r"already has columns \['r'\]"):
        transform.predict(df, Predictor(), ["x"], ["n"], ["r"], infos)


# ------------------------------------------------------------------ torch

@pytest.fixture(scope="module")
def torch_runs(spark, digits, tmp_path_factory):
    """Two fits of one run: 2 epochs, then (same run_id) 4; the second's rank
    output captured."""
    import torch  # noqa: PLC0415

    from horovod.spark.common.backend import SparkBackend  # noqa: PLC0415
    from horovod.spark.common.store import Store  # noqa: PLC0415
    from horovod.spark.torch import TorchEstimator  # noqa: PLC0415
    train_df, _ = digits
    store = Store.create(str(tmp_path_factory.mktemp("torch") / "store"))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 10))
    est = TorchEstimator(num_proc=NUM_PROC, model=model, store=store,
                         optimizer=torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                         loss=estimator_fns.cross_entropy, metrics=[estimator_fns.accuracy],
                         feature_cols=["features"], label_cols=["label"], validation=0.1,
                         batch_size=16, backward_passes_per_step=2, epochs=2, run_id="digits",
                         random_seed=1, partitions_per_process=2, verbose=1)
    with deadline(FIT_TIMEOUT_S, "the torch fits"):
        first = est.fit(train_df)
        out = io.StringIO()
        est.setNumProc(None)
        est.setBackend(SparkBackend(NUM_PROC, stdout=out, verbose=0))
        est.setEpochs(4)
        second = est.fit(train_df)
    return {"first": first, "second": second, "output": out.getvalue(), "store": store,
            "estimator": est}


@timeout(180)
def test_torch_fit_reaches_90_percent_and_transform_adds_predictions(torch_runs, digits):
    """Evaluated as upstream's example does: renamed output column, argmax
    UDF, MulticlassClassificationEvaluator."""
    from pyspark.ml.evaluation import MulticlassClassificationEvaluator  # noqa: PLC0415
    from pyspark.ml.linalg import VectorUDT  # noqa: PLC0415
    from pyspark.sql import functions as F  # noqa: PLC0415
    from pyspark.sql import types as T  # noqa: PLC0415

    from horovod.spark.torch import TorchModel  # noqa: PLC0415
    model = torch_runs["second"].copy()
    assert isinstance(model, TorchModel)
    assert model.getRunId() == "digits" and model.getOutputCols() == ["label__output"]
    assert not model.getModel().training
    pred_df = model.setOutputCols(["label_prob"]).transform(digits[1])
    assert isinstance(pred_df.schema["label_prob"].dataType, VectorUDT)
    argmax = F.udf(lambda v: float(np.argmax(v)), returnType=T.DoubleType())
    pred_df = pred_df.withColumn("label_pred", argmax(pred_df.label_prob))
    evaluator = MulticlassClassificationEvaluator(predictionCol="label_pred", labelCol="label",
                                                  metricName="accuracy")
    accuracy = evaluator.evaluate(pred_df)
    assert accuracy > 0.9, f"held-out accuracy {accuracy:.3f}"


def test_torch_second_fit_resumes_from_the_checkpoint(torch_runs):
    first, second = torch_runs["first"].getHistory(), torch_runs["second"].getHistory()
    assert [h["epoch"] for h in first] == [0, 1]
    assert [h["epoch"] for h in second] == [0, 1, 2, 3]
    assert second[:2] == first                    # read back, not trained again
    assert "Training epochs 2..3" in torch_runs["output"]
    assert "epoch 0:" not in torch_runs["output"] and "epoch 3:" in torch_runs["output"]
    assert second[3]["validation"]["loss"] < first[0]["validation"]["loss"]


def test_torch_checkpoint_and_logs_in_the_run_folder(torch_runs):
    import torch  # noqa: PLC0415
    store = torch_runs["store"]
    run = store.get_localized_path(store.get_run_path("digits"))
    assert sorted(os.listdir(run)) == ["checkpoint", "logs"]
    state = torch.load(os.path.join(run, "checkpoint"), weights_only=True)
    assert state["epoch"] == 4 and len(state["history"]) == 4
    assert state["optimizer"]["param_groups"][0]["lr"] == pytest.approx(0.05)   # one process's
    with open(os.path.join(run, "logs", "history.json")) as f:
        assert json.load(f) == torch_runs["second"].getHistory()


def test_torch_complete_run_returns_without_training(torch_runs, digits):
    """A fit whose run already has every epoch trains nothing."""
    est = torch_runs["estimator"].copy()
    est.setBackend(NoTraining())
    model = est.fit(digits[0])
    assert model.getHistory() == torch_runs["second"].getHistory()


def test_torch_checkpoint_of_another_model_is_a_clear_error(torch_runs, digits):
    import torch  # noqa: PLC0415
    est = torch_runs["estimator"].copy()
    model = torch.nn.Linear(64, 10)
    est.setModel(model).setOptimizer(torch.optim.SGD(model.parameters(), lr=0.1))
    est.setBackend(NoTraining()).setEpochs(5)
    with pytest.raises(ValueError, match="the checkpoint of run 'digits' .* does not fit this "
                                         "model and optimizer"):
        est.fit(digits[0])


@timeout(150)
def test_rank_exception_names_the_rank(spark, digits, tmp_path):
    import torch  # noqa: PLC0415

    from horovod.runner.run_api import RankError  # noqa: PLC0415
    from horovod.spark.common.store import Store  # noqa: PLC0415
    from horovod.spark.torch import TorchEstimator  # noqa: PLC0415
    model = torch.nn.Linear(64, 10)
    est = TorchEstimator(num_proc=NUM_PROC, model=model, store=Store.create(str(tmp_path)),
                         optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                         loss=estimator_fns.cross_entropy_failing_on_rank_1,
                         feature_cols=["features"], label_cols=["label"], epochs=1,
                         train_steps_per_epoch=2, partitions_per_process=1, verbose=0)
    with pytest.raises(RankError, match="rank 1") as info:
        est.fit(digits[0])
    assert info.value.rank == 1 and info.value.exc_type == "ArithmeticError"
    assert "loss exploded on purpose" in str(info.value)


# ------------------------------------------------------------------ keras

@pytest.fixture(scope="module")
def keras_runs(spark, digits, tmp_path_factory):
    import keras  # noqa: PLC0415

    from horovod.spark.common.store import Store  # noqa: PLC0415
    from horovod.spark.keras import KerasEstimator  # noqa: PLC0415
    train_df, _ = digits
    store = Store.create(str(tmp_path_factory.mktemp("keras") / "store"))
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(64, activation="relu"),
                              keras.layers.Dense(10, activation="softmax")])
    est = KerasEstimator(num_proc=NUM_PROC, model=model, store=store,
                         optimizer=keras.optimizers.SGD(0.05, momentum=0.9),
                         loss="sparse_categorical_crossentropy", metrics=["accuracy"],
                         feature_cols=["features"], label_cols=["label"], validation=0.1,
                         batch_size=32, epochs=2, run_id="digits", random_seed=1,
                         partitions_per_process=2, verbose=2)
    with deadline(FIT_TIMEOUT_S, "the keras fits"):
        first = est.fit(train_df)
        est.setEpochs(4)
        second = est.fit(train_df)
    return {"first": first, "second": second, "store": store}


@needs_tf
@keras_save_warning
@timeout(180)
def test_keras_fit_reaches_90_percent_and_transform_adds_predictions(keras_runs, digits):
    from horovod.spark.keras import KerasModel  # noqa: PLC0415
    model = keras_runs["second"]
    assert isinstance(model, KerasModel)
    accuracy = _accuracy(model, digits[1])
    assert accuracy > 0.9, f"held-out accuracy {accuracy:.3f}"


@needs_tf
@keras_save_warning
def test_keras_second_fit_resumes_from_the_checkpoint(keras_runs):
    first, second = keras_runs["first"].getHistory(), keras_runs["second"].getHistory()
    assert set(second) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert all(len(v) == 2 for v in first.values()) and all(len(v) == 4 for v in second.values())
    assert {k: v[:2] for k, v in second.items()} == first     # read back, not trained again
    assert second["loss"][3] < first["loss"][0]
    store = keras_runs["store"]
    run = store.get_localized_path(store.get_run_path("digits"))
    assert sorted(os.listdir(run)) == ["checkpoint.json", "checkpoint.keras", "logs"]
    with open(os.path.join(run, "checkpoint.json")) as f:
        assert json.load(f) == {"epochs": 4, "history": second}
    lr = keras_runs["second"].getModel().optimizer.learning_rate
    assert float(np.asarray(lr)) == pytest.approx(0.05)       # one process's


@needs_tf
def test_keras_wrong_params_are_clear_errors(spark, digits, tmp_path):
    import keras  # noqa: PLC0415

    from horovod.spark.common.store import Store  # noqa: PLC0415
    from horovod.spark.keras import KerasEstimator  # noqa: PLC0415
    model = keras.Sequential([keras.Input((10,)), keras.layers.Dense(10)])
    common = dict(num_proc=NUM_PROC, store=Store.create(str(tmp_path)), feature_cols=["features"],
                  label_cols=["label"], optimizer=keras.optimizers.SGD(0.1))
    cases = [
        (dict(model=model, loss="mse"),
         r"feature column 'features' has 64 values per row, but its model input has shape \[10\]"),
        (dict(model=model), "Loss parameter is required"),
        (dict(model="not a model", loss="mse"), "model has to be an instance of keras.Model"),
        (dict(model=model, loss="mse", checkpoint_callback=keras.callbacks.Callback()),
         "checkpoint_callback is not supported"),
    ]
    for params, message in cases:
        with pytest.raises(ValueError, match=message):
            KerasEstimator(**common, **params).fit(digits[0])


# ------------------------------------------------------------------ the example

@timeout(300)
def test_estimator_example_runs_with_plain_python(tmp_path):
    script = REPO / "examples" / "spark" / "pytorch_spark_estimator.py"
    r = run([sys.executable, str(script), "--epochs", "4", "--store", str(tmp_path / "store")],
            timeout=280, PYSPARK_PYTHON=sys.executable)
    text = r.stdout + r.stderr
    assert r.returncode == 0, text[-4000:]
    assert "test accuracy" in r.stdout, text[-4000:]
