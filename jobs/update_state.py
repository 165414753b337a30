"""spark-submit entry point: the pipeline step `update_state` (see lakemeta.pipeline)."""

import sys

from lakemeta.steps import main

if __name__ == "__main__":
    main("update_state", sys.argv[1:])
