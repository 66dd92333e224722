"""The conformance suite with a plugin-memory allreduce that secretly runs on
the CPU path: it copies the buffer to the host, allreduces there and copies
the result back, so every value is right although the device plugin never
ran the op. The suite's proof must catch it
(tests/python/test_conformance_devices.py). Arguments: the suite's."""
import sys

from horovod_accel.conformance import run_suite
from horovod_accel.conformance.plugin_memory import PluginOps, PluginTensor


def _allreduce_on_the_host(self, tensor, **kw):
    result = self._hvd.allreduce(tensor.cpu(), **kw)
    return PluginTensor.from_host(self.memory, self.device, result)


PluginOps.allreduce = _allreduce_on_the_host

if __name__ == "__main__":
    sys.exit(run_suite.main(sys.argv[1:]))
