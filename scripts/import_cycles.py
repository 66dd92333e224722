"""Import circles among this repository's Python packages (horovod_accel/, horovod/).

Parses every module with `ast` (no import runs), takes each `import` and
`from ... import` it contains -- module level and inside functions alike --
and builds the graph module -> imported module, restricted to the packages
scanned. An edge to `pkg.mod` also stands for the import of its parent
packages (`pkg/__init__.py` runs first), except an edge from inside `pkg`;
`horovod.X` (the alias package) stands for `horovod_accel.X`.
Prints the strongly connected components with more than one module and exits
1 when there is one. tests/python/test_layering.py uses `imports`,
`import_graph` and `cycles`.

    python scripts/import_cycles.py [ROOT]
"""
import ast
import sys
from pathlib import Path

PACKAGES = ("horovod_accel", "horovod")


def _module_name(root, path):
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module, is_package, node):
    """The absolute module names one import node names (relative ones resolved)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        anchor = module.split(".")
        anchor = anchor if is_package else anchor[:-1]
        anchor = anchor[:len(anchor) - (node.level - 1)]
        base = ".".join(anchor + ([base] if base else []))
    # `from pkg import name`: name may be a submodule.
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def imports(root):
    """{module: {absolute name of every module it imports, ...}} for every
    module of the packages under `root` (relative imports resolved; a
    `from pkg import name` counts as importing pkg and pkg.name), and
    {module: path}."""
    root = Path(root)
    paths = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            paths[_module_name(root, path)] = path
    names = {}
    for module, path in paths.items():
        is_package = path.name == "__init__.py"
        names[module] = {name for node in ast.walk(ast.parse(path.read_text(), str(path)))
                         if isinstance(node, (ast.Import, ast.ImportFrom))
                         for name in _resolve(module, is_package, node)}
    return names, paths


def import_graph(root):
    """{module: {imported module, ...}} restricted to the packages under
    `root`, and {module: path}."""
    names, paths = imports(root)
    graph = {}
    for module, imported in names.items():
        edges = set()
        for name in imported:
            if name.startswith("horovod."):     # the alias imports horovod_accel.<rest>
                name = "horovod_accel" + name[len("horovod"):]
            # The named module and each package above it, except those the
            # importer is itself inside (they are already running).
            parts = name.split(".")
            for i in range(len(parts), 0, -1):
                target = ".".join(parts[:i])
                if target in paths and target != module and \
                        not (module + ".").startswith(target + "."):
                    edges.add(target)
        graph[module] = edges
    return graph, paths


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def main(argv):
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    graph, _ = import_graph(root)
    found = cycles(graph)
    for component in found:
        print("circle:", " <-> ".join(component))
        for module in component:
            inside = sorted(graph[module] & set(component))
            print(f"  {module} -> {', '.join(inside)}")
    if not found:
        print(f"no import circle among {len(graph)} modules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
