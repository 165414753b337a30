"""spark-submit entry point: read a run's batches once for all components (lakemeta.steps.scan_batches)."""

import sys

from lakemeta.steps import scan_batches

if __name__ == "__main__":
    scan_batches(sys.argv[1:])
