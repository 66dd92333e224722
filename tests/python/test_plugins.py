"""Device plugin discovery through `horovodrun --check-build`: plugins named
in HOROVOD_ACCEL_PLUGINS and declared by installed packages (entry-point
group `horovod_accel.plugins`) are listed with name, version, ABI and
whether they can work here, and why not (docs/design/plugins.md).

Uses the loader fixtures that CMake builds next to the C++ unit tests
(tests/cpp/plugins/fixture_plugin.c); the README's test command builds them
first.
"""
import re
from pathlib import Path

import pytest

from launch_util import REPO, horovodrun

FIXTURES = REPO / "build" / "cpp" / "fixture_plugins"
OK = FIXTURES / "libhorovod_accel_fixture.so"

pytestmark = pytest.mark.skipif(
    not OK.exists(), reason=f"{OK} is not built (run scripts/test.sh, which builds the C++ "
                            f"tests and their plugin fixtures first)")


def test_check_build_lists_plugins_from_the_environment():
    specs = ",".join([str(OK), str(FIXTURES / "libhvda_fixture_unavailable.so"),
                      str(FIXTURES / "libhvda_fixture_abi2.so"), "nosuchvendor"])
    r = horovodrun(["--check-build"], 60, HOROVOD_ACCEL_PLUGINS=specs)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert f"[X] fixture 0.0.1 (device 'fixture', ABI 1.0, {OK})" in out, out
    # Loaded, but its vendor library is missing: says which and how to fix it.
    assert "HOROVOD_FIXTURE_RUNTIME_LIB" in out, out
    # Built for another ABI major: refused with the reason.
    assert "built for plugin ABI 2.0" in out, out
    # A name resolves to libhorovod_accel_<name>.so; missing -> "not found", with the fix.
    assert "[ ] libhorovod_accel_nosuchvendor.so" in out, out
    assert "'libhorovod_accel_nosuchvendor.so' not found" in out, out


def test_check_build_without_plugins_says_none_found():
    r = horovodrun(["--check-build"], 60)
    assert r.returncode == 0, r.stderr
    assert "Device Plugins" in r.stdout and "(none found)" in r.stdout, r.stdout


def test_plugins_from_entry_points(tmp_path):
    """An installed plugin package declares its library through the entry
    point group; a broken entry point is reported, not fatal."""
    pkg = tmp_path / "hvda_fixture_pkg.py"
    pkg.write_text(f"def library_path():\n    return {str(OK)!r}\n")
    dist = tmp_path / "hvda_fixture_pkg-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: hvda-fixture-pkg\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[horovod_accel.plugins]\nfixture = hvda_fixture_pkg:library_path\n"
        "broken = hvda_fixture_pkg:no_such_attribute\n")
    r = horovodrun(["--check-build"], 60, PYTHONPATH=f"{REPO}:{tmp_path}")
    assert r.returncode == 0, r.stderr
    assert f"[X] fixture 0.0.1 (device 'fixture', ABI 1.0, {OK})" in r.stdout, r.stdout
    assert "entry point 'broken = hvda_fixture_pkg:no_such_attribute'" in r.stdout, r.stdout


def test_check_build_tells_a_missing_dependency_from_a_missing_plugin():
    """A plugin that is there but needs a library that is not
    (docs/design/plugin_loading.md): the dlopen error naming that library,
    and where to make it findable - not "install the plugin"."""
    needs = FIXTURES / "libhvda_fixture_needs_missing.so"
    r = horovodrun(["--check-build"], 60, HOROVOD_ACCEL_PLUGINS=f"{needs},{FIXTURES}/libnope.so")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert f"'{needs}' was found but cannot be loaded" in out, out
    assert "libhvda_dup_gone.so" in out and "LD_LIBRARY_PATH" in out, out
    assert f"'{FIXTURES}/libnope.so' not found" in out, out


def test_check_build_refuses_cpu_as_a_plugins_device_type():
    """HOROVOD_<NAME>_DEVICE_TYPE=cpu would send the plugin's tensors down
    the core's CPU path (a conformance run would test that instead)."""
    r = horovodrun(["--check-build"], 60, HOROVOD_ACCEL_PLUGINS=str(OK),
                   HOROVOD_FIXTURE_DEVICE_TYPE="cpu")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert f"[ ] {OK}" in out, out
    assert "HOROVOD_FIXTURE_DEVICE_TYPE=cpu names the host device" in out, out
    assert "Unset HOROVOD_FIXTURE_DEVICE_TYPE" in out, out


def test_get_include_holds_the_plugin_abi_header_of_this_core():
    """horovod_accel.get_include(): where a vendor's build finds plugin.h
    (docs/vendor_guide.md); the header's ABI is the one this core speaks."""
    import horovod_accel
    from horovod_accel import _core
    header = Path(horovod_accel.get_include()) / "horovod_accel" / "plugin.h"
    text = header.read_text()
    major = re.search(r"#define HVDA_PLUGIN_ABI_MAJOR (\d+)u", text).group(1)
    minor = re.search(r"#define HVDA_PLUGIN_ABI_MINOR (\d+)u", text).group(1)
    assert f"{major}.{minor}" == _core.PLUGIN_ABI
