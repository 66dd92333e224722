"""How this horovod_accel was installed (a wheel, or an editable checkout),
for messages that tell a user what to do: a wheel user cannot rebuild from
a source tree; and loading the C++ extension with such a message."""
import importlib
import importlib.metadata
import json
import sys


def editable(dist):
    """Whether pip installed `dist` in editable mode (PEP 660's direct_url.json)."""
    try:
        return bool(json.loads(dist.read_text("direct_url.json") or "{}").get("dir_info", {}).get("editable"))
    except ValueError:
        return False


def how_to_fix_core():
    """What to do when _core does not load, for the way this was installed:
    a wheel user cannot rebuild from a source tree."""
    try:
        dist = importlib.metadata.distribution("horovod_accel")
    except importlib.metadata.PackageNotFoundError:
        return "Build it from the source tree with `pip install -e .`."
    if editable(dist):
        return "Rebuild it from the source tree with `pip install -e .`."
    return ("Reinstall the wheel for this Python and platform "
            "(pip install --force-reinstall horovod_accel), then run `horovodrun --check-build`.")


def load_core():
    """The `horovod_accel._core` module, imported on first use; ImportError
    with a how-to-fix message. Cheap once loaded (the per-op path calls it)."""
    core = sys.modules.get("horovod_accel._core")
    if core is not None:
        return core
    try:
        return importlib.import_module("horovod_accel._core")
    except ImportError as e:
        raise ImportError(f"horovod_accel's C++ extension (horovod_accel._core) failed to load: "
                          f"{e}. {how_to_fix_core()}") from e
