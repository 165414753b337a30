"""spark-submit entry point: the pipeline step `update_hll_counters` (see lakemeta.pipeline)."""

import sys

from lakemeta.steps import main

if __name__ == "__main__":
    main("update_hll_counters", sys.argv[1:])
