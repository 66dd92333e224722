"""Gives pip inside a container (an image build or a test container) this
host's pip settings: the index URLs, local wheel folders and the CA bundle,
which a build container needs where the registries are reached through a
proxy that re-signs TLS (docs/design/packaging.md).

Usage: python scripts/pip_passthrough.py DIR
Writes DIR/pip.conf with the host's `cert`, `index-url`, `extra-index-url`
and `find-links` (from `pip config list`) and prints podman/docker `-v`
arguments, one per line: DIR/pip.conf at /etc/pip.conf, and every local path
those settings name (the CA bundle, file:// indexes with the folder their
links point into) at the same path, all read-only. Bind mounts are not part
of the image: nothing of this host stays in it.
"""
import os
import re
import subprocess
import sys

KEYS = ("cert", "index-url", "extra-index-url", "find-links")


def host_settings():
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True,
                         text=True, timeout=60, check=False).stdout
    settings = {}
    for line in out.splitlines():
        m = re.fullmatch(r"[^.]*\.([a-z-]+)='(.*)'", line.strip())
        if m and m.group(1) in KEYS:
            settings[m.group(1)] = m.group(2)
    return settings


def local_paths(settings):
    paths = set()
    for value in settings.values():
        for item in value.split():
            path = item[len("file://"):] if item.startswith("file://") else item
            path = path.rstrip("/")
            if not path.startswith("/") or not os.path.exists(path):
                continue
            # A local simple index links to files beside it (../files/...).
            paths.add(os.path.dirname(path) if path.endswith("/simple") else path)
    return sorted(paths)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: python scripts/pip_passthrough.py DIR")
    out_dir = os.path.abspath(sys.argv[1])
    os.makedirs(out_dir, exist_ok=True)
    settings = host_settings()
    conf = os.path.join(out_dir, "pip.conf")
    with open(conf, "w", encoding="utf-8") as f:
        f.write("[global]\n")
        for key in KEYS:
            if key in settings:
                f.write(f"{key} = {settings[key]}\n")
    print("-v")
    print(f"{conf}:/etc/pip.conf:ro")
    for path in local_paths(settings):
        print("-v")
        print(f"{path}:{path}:ro")


if __name__ == "__main__":
    main()
