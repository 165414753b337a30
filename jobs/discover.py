"""spark-submit entry point: the discovery step named by the first argument (lakemeta.steps.discover)."""

import sys

from lakemeta.steps import discover

if __name__ == "__main__":
    discover(sys.argv[1:])
