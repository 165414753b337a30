"""spark-submit entry point: the pipeline step `update_agree_sets` (see lakemeta.pipeline)."""

import sys

from lakemeta.steps import main

if __name__ == "__main__":
    main("update_agree_sets", sys.argv[1:])
