"""`python -m horovod_accel.conformance --device NAME [--quick] [--filter S] [--verbose]`."""
import sys

from horovod_accel.conformance.run_suite import main

if __name__ == "__main__":
    sys.exit(main())
