"""spark-submit entry point: commit the run's batches (lakemeta.steps.commit_batches)."""

import sys

from lakemeta.steps import commit_batches

if __name__ == "__main__":
    commit_batches(sys.argv[1:])
