"""spark-submit entry point: plan a run's batches (lakemeta.steps.detect_batches)."""

import sys

from lakemeta.steps import detect_batches

if __name__ == "__main__":
    detect_batches(sys.argv[1:])
