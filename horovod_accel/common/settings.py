"""The Python view of the one settings table (csrc/common/util/settings_table.h).

Python code that reads a setting the core also knows (the launcher's
HOROVOD_START_TIMEOUT, init()'s job identity, the plugin list) reads it here,
so its type, default and range come from the table and never from a literal
repeated in a module. Values parse exactly as the core parses them (the
core's own parser, `_core.parse_setting`), and a bad value raises ValueError
naming the variable.

The C++ extension is imported on first use, so importing this module never
fails merely because the core is not built. It imports nothing else of the
package: launchers, the rendezvous client and init() all read settings here.
"""
import functools
import os

from horovod_accel.common.install_info import load_core as _core


@functools.lru_cache(maxsize=1)
def table():
    """Every setting: a tuple of dicts with name, scope ('job': set by a
    launcher and passed to the core in a JobSpec; 'core': read by init();
    'python': read by the Python package only),
    type, default, range, upstream (upstream Horovod's name; '' for
    horovod_accel's own) and doc, in the table's order."""
    return tuple(_core().settings_table())


def names():
    """The names of every setting, in the table's order."""
    return [row["name"] for row in table()]


def read(name, env=None):
    """The typed value of setting `name` in `env` (default os.environ): its
    default when unset or empty. KeyError when `name` is not in the table;
    ValueError when the value does not parse or is out of range."""
    env = os.environ if env is None else env
    return _core().parse_setting(name, env.get(name, ""))


def default(name):
    """The typed default of setting `name`."""
    return _core().parse_setting(name, "")


def markdown(scope):
    """The rows of docs/settings.md for the settings of `scope` ('job',
    'core' or 'python'), header included: `python -m horovod_accel.common.settings`
    prints both tables, which is how the page is regenerated."""
    lines = ["| variable | type | default | range | upstream | meaning |",
             "|---|---|---|---|---|---|"]
    for row in table():
        if row["scope"] != scope:
            continue
        upstream = "same" if row["upstream"] == row["name"] else (row["upstream"] or "—")
        lines.append(f"| `{row['name']}` | {row['type']} | `{row['default']}` | "
                     f"{row['range'] or 'any'} | {upstream} | {row['doc']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    for _scope in ("job", "core", "python"):
        print(markdown(_scope))
        print()
