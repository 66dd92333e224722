"""Ships the output of one rank process from its Spark task to the driver
through the job's store (NOTE [Spark task protocol]: `out/<name>/<k>/<n>`).

The task's forwarders (runner/output.py StreamForwarder, which add the
`[rank]<stdout>:` prefix) write whole lines into `console(stream)`; a daemon
thread sends what accumulated every INTERVAL_S as one store value, so a
chatty rank costs one store round trip per interval, not one per line.
"""
import threading

from horovod_accel.rendezvous.client import StoreError
from horovod_accel.spark import protocol

INTERVAL_S = 0.05
MAX_BATCH_CHARS = 1 << 20  # a batch larger than this is sent at once


class _Console:
    """The file-like end one StreamForwarder writes to."""

    def __init__(self, shipper, stream):
        self._shipper = shipper
        self._stream = stream

    def write(self, text):
        self._shipper.add(self._stream, text)

    def flush(self):
        pass  # the shipper's thread sends on its own schedule


class OutputShipper:
    """Owns `store` (a StoreClient used by no one else; closed by close()) and
    one daemon thread. Thread-safe: both forwarders of a rank write into it.
    If the driver is gone (StoreError), the output is dropped: nobody could
    read it."""

    def __init__(self, store, name, k):
        self._store = store
        self._name = name
        self._k = k
        self._seq = 0
        self._batch = []
        self._chars = 0
        self._closed = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=f"hvda-spark-out-{name}-{k}",
                                        daemon=True)
        self._thread.start()

    def console(self, stream):
        return _Console(self, stream)

    def add(self, stream, text):
        with self._cond:
            if self._batch and self._batch[-1][0] == stream:
                self._batch[-1][1] += text
            else:
                self._batch.append([stream, text])
            self._chars += len(text)
            if self._chars >= MAX_BATCH_CHARS:
                self._cond.notify()

    def _take(self):
        batch, self._batch, self._chars = self._batch, [], 0
        return batch

    def _send(self, batch):
        try:
            self._store.set(protocol.output_key(self._name, self._k, self._seq),
                            protocol.format_output(batch))
            self._seq += 1
        except StoreError:
            pass

    def _run(self):
        while True:
            with self._cond:
                if not self._closed and self._chars < MAX_BATCH_CHARS:
                    self._cond.wait(INTERVAL_S)
                batch, closed = self._take(), self._closed
            if batch:
                self._send(batch)
            if closed:
                self._send(None)  # the end: the driver's reader stops here
                return

    def close(self):
        """Sends what is left and the end marker; blocks until sent (or the
        driver is found gone). Call after the forwarders reached EOF."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join()
        self._store.close()
