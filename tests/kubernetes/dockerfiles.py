"""docker/Dockerfile.* read as instructions, for the static checks of the
images' contract in tests/python/test_kubernetes.py (no image is built
here: there is no Docker engine on these machines).

parse(path) -> [Stage]; a Stage has `base` (its FROM), `name` (AS ...) and
`instructions`: (KEYWORD, argument text) pairs with continuation lines
joined and comments dropped, in file order.
"""
import re
import shlex
from dataclasses import dataclass, field


@dataclass
class Stage:
    base: str
    name: str = None
    instructions: list = field(default_factory=list)

    def args(self, keyword):
        """Argument texts of every `keyword` instruction, in order."""
        return [a for k, a in self.instructions if k == keyword]

    def last(self, keyword):
        found = self.args(keyword)
        return found[-1] if found else None

    def copies(self):
        """(sources, destination, flags) of each COPY, e.g.
        (['docker/run.sh', 'docker/run.env'], './', {'--chown': 'mpiuser'})."""
        out = []
        for a in self.args("COPY"):
            words = shlex.split(a)
            flags = dict(w[2:].split("=", 1) if "=" in w else (w[2:], "")
                         for w in words if w.startswith("--"))
            paths = [w for w in words if not w.startswith("--")]
            out.append((paths[:-1], paths[-1], {f"--{k}": v for k, v in flags.items()}))
        return out

    def apt_packages(self):
        """Every package named by `apt-get install` in this stage's RUNs."""
        pkgs = set()
        for run in self.args("RUN"):
            for m in re.finditer(r"apt-get install ([^&;|]*)", run):
                pkgs.update(w for w in m.group(1).split() if not w.startswith("-"))
        return pkgs


def _logical_lines(text):
    line = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith("#"):
            continue  # comments (also between continuation lines) are dropped
        if stripped.endswith("\\"):
            line += stripped[:-1] + " "
            continue
        line += stripped
        if line.strip():
            yield line.strip()
        line = ""
    if line.strip():
        yield line.strip()


def parse(path):
    stages = []
    for line in _logical_lines(open(path).read()):
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            m = re.match(r"(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?", rest, re.I)
            stages.append(Stage(base=m.group(1), name=m.group(2)))
        elif stages:
            stages[-1].instructions.append((keyword, rest.strip()))
    return stages
