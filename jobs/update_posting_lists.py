"""spark-submit entry point: the pipeline step `update_posting_lists` (see lakemeta.pipeline)."""

import sys

from lakemeta.steps import main

if __name__ == "__main__":
    main("update_posting_lists", sys.argv[1:])
