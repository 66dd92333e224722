"""Prints this rank's launcher-provided environment as one JSON line."""
import json
import os

keys = [k for k in os.environ if k.startswith(("HOROVOD_", "_HOROVOD_"))] + ["PYTHONUNBUFFERED"]
print("ENV " + json.dumps({k: os.environ.get(k) for k in keys}))
