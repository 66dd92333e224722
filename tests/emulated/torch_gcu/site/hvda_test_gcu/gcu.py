"""`torch.gcu` / `torch.emucuda`: the device module of the test-only device.

One module serves both flavours (see __init__.py); `_name` is the device name
torch knows ('gcu' or 'emucuda') and every message and device check uses it.
A small subset of what torch_gcu / torch.cuda offer. Each device has one
stream, the runtime's default stream (native handle 0 = NULL);
`current_stream()` returns it with the native handle in `native_handle` and
`<name>_stream` (`gcu_stream`, `emucuda_stream`). Random numbers for device
tensors come from the CPU generator (random ops run through the CPU
fallback), so the seeding functions here have nothing of their own to seed.
"""
import torch

_C = None  # the native extension, set by hvda_test_gcu.install()
_name = "gcu"  # the torch device name, set by hvda_test_gcu.install()
_runtime_var = "HOROVOD_GCU_RUNTIME_LIB"  # the variable naming the runtime library
_runtime = "TOPS"  # the runtime's name, for messages
_runtime_lib = None  # absolute path of the loaded runtime, or None

__all__ = ["is_available", "is_initialized", "init", "device_count", "current_device",
           "set_device", "device", "synchronize", "Stream", "current_stream", "default_stream",
           "stream", "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed",
           "get_rng_state", "set_rng_state", "get_amp_supported_dtype"]


def _ext():
    if _C is None:
        raise RuntimeError(f"torch.{_name}: the native extension is not loaded; import torch with "
                           f"tests/emulated/torch_gcu/site on PYTHONPATH (env.sh)")
    return _C


def _require_runtime():
    if _C is None or _C._runtime_path() is None:
        raise RuntimeError(f"torch.{_name}: the {_runtime} runtime is not loaded: set "
                           f"{_runtime_var} to the (emulated) {_runtime} runtime library before "
                           f"importing torch")


def is_available() -> bool:
    return device_count() > 0


def is_initialized() -> bool:
    return _C is not None and _C._runtime_path() is not None


def init() -> None:
    _require_runtime()


def _lazy_init() -> None:
    _require_runtime()


def _is_in_bad_fork() -> bool:
    return False


def device_count() -> int:
    return _C.device_count() if _C is not None else 0


def current_device() -> int:
    _require_runtime()
    return _ext().current_device()


def _get_device_index(dev, optional: bool = True) -> int:
    """Index of `dev` (int, '<name>', '<name>:1', torch.device or None = current)."""
    if dev is None:
        if not optional:
            raise ValueError(f"torch.{_name}: a device is required")
        return current_device()
    if isinstance(dev, str):
        dev = torch.device(dev)
    if isinstance(dev, torch.device):
        if dev.type != _name:
            raise ValueError(f"torch.{_name}: expected a {_name} device, got {dev}")
        return current_device() if dev.index is None else dev.index
    if isinstance(dev, int):
        return current_device() if dev < 0 else dev
    raise TypeError(f"torch.{_name}: invalid device {dev!r}")


def set_device(dev) -> None:
    _require_runtime()
    idx = _get_device_index(dev)
    _ext().set_device(idx)


class device:
    """Context manager that makes `dev` the current device."""

    def __init__(self, dev):
        self.idx = -1 if dev is None else _get_device_index(dev)
        self.prev = -1

    def __enter__(self):
        if self.idx >= 0:
            self.prev = current_device()
            if self.prev != self.idx:
                set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx >= 0 and self.prev != self.idx:
            set_device(self.prev)
        return False


def synchronize(dev=None) -> None:
    """Waits for all work on the (default stream of the) device."""
    _require_runtime()
    _ext().synchronize(_get_device_index(dev))


class Stream:
    """The default stream of a device (the only stream there is). The native
    handle (0 = NULL = the default stream) is in `native_handle` and in
    `<name>_stream` (`gcu_stream` / `emucuda_stream`), which horovod_accel's
    torch adapter reads."""

    def __init__(self, device=None, priority: int = 0):
        self.device = torch.device(_name, _get_device_index(device))
        self.stream_id = 0
        self.priority = priority
        self.native_handle = 0
        setattr(self, f"{_name}_stream", self.native_handle)

    @property
    def device_index(self) -> int:
        return self.device.index

    @property
    def device_type(self) -> str:
        return _name

    def synchronize(self) -> None:
        synchronize(self.device)

    def query(self) -> bool:
        synchronize(self.device)
        return True

    def wait_stream(self, other) -> None:
        pass  # one stream per device: work is already in order

    def __eq__(self, other):
        return isinstance(other, Stream) and (self.device, self.native_handle) == (
            other.device, other.native_handle)

    def __hash__(self):
        return hash((self.device, self.native_handle))

    def __repr__(self):
        return (f"<torch.{_name}.Stream device={self.device} "
                f"{_name}_stream={self.native_handle:#x}>")


_default_streams = {}  # device index -> its Stream (each device has exactly one)


def current_stream(device=None) -> Stream:
    # One object per device, as cheap as a framework's C++ lookup would be
    # (building a Stream in Python each call cost 3 us, 13-20 us on a busy
    # 2-core host, which benchmarks/device_overhead.py then charged to
    # horovod_accel).
    idx = _get_device_index(device)
    s = _default_streams.get(idx)
    if s is None:
        s = _default_streams[idx] = Stream(idx)
    return s


def default_stream(device=None) -> Stream:
    return Stream(device)


class stream:
    """Context manager selecting a stream; only the default stream exists."""

    def __init__(self, s):
        self.s = s

    def __enter__(self):
        if self.s is not None and self.s.native_handle != 0:
            raise RuntimeError(f"torch.{_name}: only the default stream exists")
        return self.s

    def __exit__(self, *exc):
        return False


# Random numbers of device tensors come from the CPU generator.
def manual_seed(seed) -> None:
    pass


def manual_seed_all(seed) -> None:
    pass


def seed() -> None:
    pass


def seed_all() -> None:
    pass


def initial_seed() -> int:
    return torch.initial_seed()


def get_rng_state(device=None) -> torch.Tensor:
    return torch.get_rng_state()


def set_rng_state(new_state, device=None) -> None:
    torch.set_rng_state(new_state)


def get_amp_supported_dtype():
    return [torch.float16, torch.bfloat16]
