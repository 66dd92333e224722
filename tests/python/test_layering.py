"""The tree's layering rules (issue 26), read from the source without running
it: no Python import circle, common/ never imports the launcher, the core in
csrc/common/ includes no concrete device, and no source file over 600 lines.
"""
import importlib.util
import re

import pytest

from launch_util import REPO

MAX_LINES = 600
SOURCE_DIRS = ("csrc", "horovod_accel", "horovod", "scripts", "benchmarks")
SOURCE_SUFFIXES = {".py", ".c", ".cc", ".cpp", ".cu", ".h", ".hpp", ".sh", ".cmake"}


def _checker():
    """scripts/import_cycles.py, loaded as a module."""
    spec = importlib.util.spec_from_file_location("import_cycles",
                                                  REPO / "scripts" / "import_cycles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def checker():
    return _checker()


def test_no_python_import_circle(checker):
    graph, _ = checker.import_graph(REPO)
    assert len(graph) > 50, "the checker found too few modules; has the layout moved?"
    found = checker.cycles(graph)
    assert not found, "import circles (module- and function-level imports): " + "; ".join(
        " <-> ".join(component) for component in found)


def test_circle_checker_sees_function_level_imports(checker, tmp_path):
    package = tmp_path / "horovod_accel"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from horovod_accel import b\n")
    (package / "b.py").write_text("def f():\n    from . import a\n")
    graph, _ = checker.import_graph(tmp_path)
    assert checker.cycles(graph) == [["horovod_accel.a", "horovod_accel.b"]]


def test_common_does_not_import_the_launcher(checker):
    names, paths = checker.imports(REPO)
    offenders = sorted(
        f"{paths[module].relative_to(REPO)} imports {name}"
        for module, imported in names.items() if module.startswith("horovod_accel.common")
        for name in imported
        if re.match(r"horovod(_accel)?\.runner(\.|$)", name))
    assert not offenders, "horovod_accel/common must not import horovod_accel.runner: " + \
        "; ".join(offenders)


def test_core_includes_no_device():
    include = re.compile(r'^\s*#\s*include\s*"devices/', re.M)
    offenders = sorted(str(path.relative_to(REPO)) for path in (REPO / "csrc" / "common").rglob("*")
                       if path.is_file() and include.search(path.read_text(errors="replace")))
    assert not offenders, "csrc/common/ must not include csrc/devices/: " + ", ".join(offenders)


def _is_test(path):
    rel = path.relative_to(REPO)
    return "tests" in rel.parts or rel.name.startswith("test_") or \
        rel.stem.endswith("_test")


def test_no_source_file_over_600_lines():
    long_files = []
    for top in SOURCE_DIRS:
        for path in sorted((REPO / top).rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or _is_test(path):
                continue
            if path.suffix not in SOURCE_SUFFIXES and path.name != "CMakeLists.txt":
                continue
            lines = path.read_text(errors="replace").count("\n")
            if lines > MAX_LINES:
                long_files.append(f"{path.relative_to(REPO)} ({lines} lines)")
    assert not long_files, f"source files over {MAX_LINES} lines: " + ", ".join(long_files)
