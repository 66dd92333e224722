"""The tree's layering rules (issue 26), read from the source without running
it: no Python import circle, common/ never imports the launcher, the core in
csrc/common/ includes no concrete device, no #include circle in csrc/, the
shared kernels below everything else, and no source file over 600 lines.
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


def _cpp_include_graph():
    """File-level #include "..." graph of csrc/ (paths relative to csrc/ or csrc/include/, or
    beside the including file)."""
    csrc = REPO / "csrc"
    include = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
    graph = {}
    for path in csrc.rglob("*"):
        if not path.is_file() or path.suffix not in {".h", ".cc", ".c", ".cpp"}:
            continue
        edges = set()
        for name in include.findall(path.read_text(errors="replace")):
            for base in (csrc, csrc / "include", path.parent):
                if (base / name).is_file():
                    edges.add(str((base / name).resolve().relative_to(csrc)))
                    break
        graph[str(path.relative_to(csrc))] = edges
    return graph


def test_no_cpp_include_circle(checker):
    graph = _cpp_include_graph()
    assert "common/runtime.cc" in graph and "common/runtime.h" in graph["common/runtime.cc"]
    found = checker.cycles(graph)
    assert not found, "#include circles: " + "; ".join(" <-> ".join(c) for c in found)


def test_shared_kernels_depend_only_on_the_dtype_vocabulary():
    """csrc/kernels/ is below both the core and the devices: it may include only itself and
    common/dtype.h (and what that includes)."""
    allowed = {"common/dtype.h"}
    graph = _cpp_include_graph()
    offenders = sorted(f"{f} includes {t}" for f, ts in graph.items() if f.startswith("kernels/")
                       for t in ts if not t.startswith("kernels/") and t not in allowed)
    assert not offenders, "; ".join(offenders)


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
