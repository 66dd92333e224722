"""How the torch adapter finds the framework's current native stream of an
accelerator tensor (horovod_accel/torch/tensors.py: native_stream), without a
device: a fake device type whose torch module and raw-stream getter the test
installs. In process; nothing is initialized or launched."""
import types

import pytest
import torch

from horovod_accel.torch import tensors

FAKE = "hvdafake"


@pytest.fixture
def fake_device(monkeypatch):
    """torch.hvdafake with current_device() == 2 and current_stream(device)
    whose handle is 0x100 + index; the caches of looked-up modules are cleared
    around the test."""
    module = types.SimpleNamespace(
        current_device=lambda: 2,
        current_stream=lambda device: types.SimpleNamespace(
            **{f"{FAKE}_stream": 0x100 + tensors._index(device)}))
    monkeypatch.setattr(torch, FAKE, module, raising=False)
    tensors._device_module.cache_clear()
    yield module
    tensors._device_module.cache_clear()


def device(index):
    return types.SimpleNamespace(type=FAKE, index=index)


def test_stream_object_handle_of_the_given_or_current_device(fake_device):
    assert tensors.native_stream(device(1)) == 0x101
    assert tensors.native_stream(device(None)) == 0x102


def test_raw_getter_is_preferred_and_gets_the_device_index(fake_device, monkeypatch):
    asked = []

    def raw(index):
        asked.append(index)
        return 0xABC0 + index

    monkeypatch.setattr(torch._C, f"_{FAKE}_getCurrentRawStream", raw, raising=False)
    tensors._device_module.cache_clear()
    assert tensors.native_stream(device(1)) == 0xABC1
    assert tensors.native_stream(device(None)) == 0xABC2
    assert asked == [1, 2]


def test_device_type_without_stream_api_uses_the_default_stream(monkeypatch):
    monkeypatch.setattr(torch, FAKE, types.SimpleNamespace(), raising=False)
    tensors._device_module.cache_clear()
    try:
        assert tensors.native_stream(device(0)) == 0
    finally:
        tensors._device_module.cache_clear()


def test_cpu_tensors_have_no_device_ref():
    assert tensors.device_id(torch.ones(3)) == -1
