"""spark-submit entry point: the pipeline step `commit` (see lakemeta.pipeline)."""

import sys

from lakemeta.steps import main

if __name__ == "__main__":
    main("commit", sys.argv[1:])
