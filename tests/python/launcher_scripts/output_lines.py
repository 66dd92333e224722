"""Writes two lines to stdout and one to stderr, tagged with the rank."""
import os
import sys

r = os.environ["HOROVOD_RANK"]
print(f"hello from {r}")
print(f"second line from {r}")
print(f"warning from {r}", file=sys.stderr)
