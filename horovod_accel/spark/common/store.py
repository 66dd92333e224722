"""Stores (upstream's horovod.spark.common.store): where an estimator keeps
the DataFrames it trains on and the artifacts of its runs.

Layout under `prefix_path` (upstream's names):
    intermediate_train_data.<idx>/   training rows as Parquet (written by Spark)
    intermediate_val_data.<idx>/     validation rows, when `validation` is set
    intermediate_test_data.<idx>/    (named for upstream; estimators do not write it)
    runs/<run_id>/                   one run: its checkpoint (get_checkpoint_filename())
    runs/<run_id>/logs/              and its logs

<idx> is the dataset index of one fit (horovod_accel/spark/common/dataset.py):
concurrent fits into one store use different indices.

Every path a Store returns is a full URL (`file:///...`, `s3://...`): Spark
writes the Parquet to it and the ranks read it back through the store's
fsspec filesystem (`fs`, which takes localized paths, i.e. without the
protocol). A Store is picklable (its fsspec filesystem is): it travels to the
ranks inside the training call.
"""
import abc
import contextlib
import os
import pathlib
import posixpath
import tempfile
import uuid

TRAIN_DIR = "intermediate_train_data"
VAL_DIR = "intermediate_val_data"
TEST_DIR = "intermediate_test_data"
RUNS_DIR = "runs"
LOGS_SUBDIR = "logs"
CHECKPOINT_FILENAME = "checkpoint"


class Store(abc.ABC):
    """Storage for intermediate data (materialized DataFrames) and training
    artifacts (checkpoints, logs). Every fit gets its own dataset index and
    every run its own `runs/<run_id>`."""

    @staticmethod
    def create(prefix_path, *args, **kwargs):
        """The store for `prefix_path`: a FilesystemStore over the fsspec
        filesystem of its protocol (a local path, `file://`, `memory://`,
        `s3://`, `gs://`, `hdfs://`, ... whatever fsspec has installed)."""
        return FilesystemStore(prefix_path, *args, **kwargs)

    @abc.abstractmethod
    def get_train_data_path(self, idx=None):
        """The Parquet dataset of training rows of dataset `idx`."""

    @abc.abstractmethod
    def get_val_data_path(self, idx=None):
        """The Parquet dataset of validation rows of dataset `idx`."""

    @abc.abstractmethod
    def get_test_data_path(self, idx=None):
        """The Parquet dataset of test rows of dataset `idx`."""

    @abc.abstractmethod
    def saving_runs(self):
        """True if checkpoints and logs are kept under get_runs_path()."""

    @abc.abstractmethod
    def get_runs_path(self):
        """The folder of all runs."""

    @abc.abstractmethod
    def get_run_path(self, run_id):
        """The folder of run `run_id`."""

    @abc.abstractmethod
    def get_checkpoint_path(self, run_id):
        """The folder of run_id's checkpoint (None when not saving runs)."""

    @abc.abstractmethod
    def get_logs_path(self, run_id):
        """The folder of run_id's logs (None when not saving runs)."""

    @abc.abstractmethod
    def get_checkpoint_filename(self):
        """The checkpoint's file name inside get_checkpoint_path()."""

    @abc.abstractmethod
    def get_logs_subdir(self):
        """The logs folder's name inside a run folder."""

    @abc.abstractmethod
    def exists(self, path):
        """True if `path` (a file or folder) exists."""

    @abc.abstractmethod
    def read(self, path):
        """The bytes of file `path`."""

    @abc.abstractmethod
    def write_text(self, path, text):
        """Writes `text` to file `path`."""

    def to_remote(self, run_id, dataset_idx):
        """What the training processes need of this store for one run:
        upstream's remote view (train_data_path, val_data_path, run_path,
        checkpoint_path, logs_path, ...) plus this store for reading and
        writing (`store`)."""
        return RemoteStore(self, run_id, dataset_idx)


class RemoteStore:
    """The paths of one run and dataset (upstream's attribute names), and
    the store itself (`store`) for I/O. Picklable."""

    def __init__(self, store, run_id, dataset_idx):
        self.store = store
        self.train_data_path = store.get_train_data_path(dataset_idx)
        self.val_data_path = store.get_val_data_path(dataset_idx)
        self.test_data_path = store.get_test_data_path(dataset_idx)
        self.saving_runs = store.saving_runs()
        self.runs_path = store.get_runs_path()
        self.run_path = store.get_run_path(run_id)
        self.checkpoint_path = store.get_checkpoint_path(run_id)
        self.logs_path = store.get_logs_path(run_id)
        self.checkpoint_filename = store.get_checkpoint_filename()
        self.logs_subdir = store.get_logs_subdir()
        self.get_local_output_dir = store.get_local_output_dir_fn(run_id)
        self.sync = store.sync_fn(run_id)


class AbstractFilesystemStore(Store):
    """A Store on a filesystem (`fs`, fsspec's interface, localized paths)."""

    def __init__(self, prefix_path, train_path=None, val_path=None, test_path=None,
                 runs_path=None, save_runs=True, storage_options=None, checkpoint_filename=None):
        self.prefix_path = self.get_full_path(prefix_path)
        self._train_path = self._full_or_default(train_path, TRAIN_DIR)
        self._val_path = self._full_or_default(val_path, VAL_DIR)
        self._test_path = self._full_or_default(test_path, TEST_DIR)
        self._runs_path = self._full_or_default(runs_path, RUNS_DIR)
        self._save_runs = save_runs
        self.storage_options = storage_options
        self.checkpoint_filename = checkpoint_filename or CHECKPOINT_FILENAME

    @property
    @abc.abstractmethod
    def fs(self):
        """The fsspec filesystem; it takes localized paths."""

    @abc.abstractmethod
    def get_full_path(self, path):
        """`path` as a full URL of this store's filesystem."""

    @abc.abstractmethod
    def get_localized_path(self, path):
        """`path` without its protocol, as `fs` takes it."""

    def _full_or_default(self, path, default_name):
        if path is not None:
            return self.get_full_path(path)
        return posixpath.join(self.prefix_path, default_name)

    # ---- paths (upstream's) ----

    def get_train_data_path(self, idx=None):
        return self._train_path if idx is None else f"{self._train_path}.{idx}"

    def get_val_data_path(self, idx=None):
        return self._val_path if idx is None else f"{self._val_path}.{idx}"

    def get_test_data_path(self, idx=None):
        return self._test_path if idx is None else f"{self._test_path}.{idx}"

    def saving_runs(self):
        return self._save_runs

    def get_runs_path(self):
        return self._runs_path

    def get_run_path(self, run_id):
        return posixpath.join(self._runs_path, run_id)

    def get_checkpoint_path(self, run_id):
        return self.get_run_path(run_id) if self._save_runs else None

    def get_checkpoints(self, run_id, suffix=".ckpt"):
        """The files of run_id's checkpoint folder whose names end in suffix."""
        folder = self.get_localized_path(self.get_checkpoint_path(run_id))
        return sorted(p for p in self.fs.ls(folder, detail=False) if p.endswith(suffix))

    def get_logs_path(self, run_id):
        return posixpath.join(self.get_run_path(run_id), LOGS_SUBDIR) if self._save_runs else None

    def get_checkpoint_filename(self):
        return self.checkpoint_filename

    def get_logs_subdir(self):
        return LOGS_SUBDIR

    # ---- I/O ----

    def exists(self, path):
        return self.fs.exists(self.get_localized_path(path))

    def read(self, path):
        with self.fs.open(self.get_localized_path(path), "rb") as f:
            return f.read()

    def write_text(self, path, text):
        self.write_bytes(path, text.encode("utf-8"))

    def write_bytes(self, path, data):
        """Writes file `path` so that readers see the old or the new
        contents, never a part (a temporary file beside it, then a rename;
        on object stores, where rename is a copy, a single PUT)."""
        local = self.get_localized_path(path)
        self.fs.makedirs(posixpath.dirname(local), exist_ok=True)
        tmp = f"{local}.tmp-{uuid.uuid4().hex[:12]}"
        try:
            self.fs.pipe_file(tmp, bytes(data))
            self.fs.mv(tmp, local)
        finally:
            if self.fs.exists(tmp):
                self.fs.rm_file(tmp)

    def delete(self, path):
        """Removes file or folder `path` (recursively) if it exists."""
        local = self.get_localized_path(path)
        if self.fs.exists(local):
            self.fs.rm(local, recursive=True)

    def check_writable(self):
        """Raises ValueError, saying what to do, unless this process can
        create prefix_path and write a file in it."""
        prefix = self.get_localized_path(self.prefix_path)
        probe = posixpath.join(prefix, f".horovod_write_probe_{uuid.uuid4().hex[:12]}")
        try:
            self.fs.makedirs(prefix, exist_ok=True)
            self.fs.pipe_file(probe, b"")
            self.fs.rm_file(probe)
        except OSError as e:
            raise ValueError(
                f"The store's prefix_path {self.prefix_path} is not writable: {e}. Give the "
                "estimator a Store over a folder that the Spark driver and its executors can "
                "write, e.g. Store.create('/shared/tmp/horovod')") from e

    def is_parquet_dataset(self, path):
        """True if `path` is a readable Parquet dataset with at least one file."""
        try:
            return len(self.get_parquet_dataset(path).files) > 0
        except (OSError, ValueError):
            return False

    def get_parquet_dataset(self, path):
        """`path` as a pyarrow.dataset.Dataset (the files Spark wrote;
        `_SUCCESS` and other `_`/`.` files are skipped)."""
        import pyarrow.dataset as ds  # noqa: PLC0415
        return ds.dataset(self.get_localized_path(path), format="parquet", filesystem=self.fs)

    def get_local_output_dir_fn(self, run_id):
        """A context manager factory: a local temporary folder, removed on exit."""
        @contextlib.contextmanager
        def local_run_path():
            with tempfile.TemporaryDirectory(prefix=f"horovod_{run_id}_") as tmpdir:
                yield tmpdir
        return local_run_path

    def sync_fn(self, run_id):
        """A function that copies a local folder, recursively, into run_id's
        folder (files overwritten; nothing deleted)."""
        run_path = self.get_run_path(run_id)

        def sync(local_dir):
            for root, _, files in os.walk(local_dir):
                rel = os.path.relpath(root, local_dir)
                target = run_path if rel == "." else posixpath.join(run_path, *rel.split(os.sep))
                for name in files:
                    with open(os.path.join(root, name), "rb") as f:
                        self.write_bytes(posixpath.join(target, name), f.read())
        return sync


class FilesystemStore(AbstractFilesystemStore):
    """A store on any fsspec filesystem, chosen by prefix_path's protocol
    (none: the local filesystem). storage_options go to the filesystem
    (credentials, endpoints)."""

    def __init__(self, prefix_path, *args, **kwargs):
        import fsspec  # noqa: PLC0415
        from fsspec.core import split_protocol  # noqa: PLC0415
        self.protocol, _ = split_protocol(prefix_path)
        cls = fsspec.get_filesystem_class(self.protocol or "file")
        options = cls._get_kwargs_from_urls(prefix_path)  # noqa: SLF001 - fsspec's own hook
        options.update(kwargs.get("storage_options") or {})
        self._fs = cls(**options)
        super().__init__(prefix_path, *args, **kwargs)

    @property
    def fs(self):
        return self._fs

    def get_filesystem(self):
        return self._fs

    def get_full_path(self, path):
        from fsspec.core import split_protocol  # noqa: PLC0415
        protocol, _ = split_protocol(path)
        if protocol is not None:
            return path
        return pathlib.Path(os.path.abspath(path)).as_uri()

    def get_localized_path(self, path):
        from fsspec.core import split_protocol  # noqa: PLC0415
        protocol, local = split_protocol(path)
        if protocol is None or protocol == "file":
            return local
        return self._fs._strip_protocol(path)  # noqa: SLF001 - fsspec's own normalisation


class LocalStore(FilesystemStore):
    """A store on the local filesystem (upstream keeps the name; it is a
    FilesystemStore). On a multi-machine cluster the path must be a shared
    mount that the driver and every executor see."""
