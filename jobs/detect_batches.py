"""spark-submit entry point: the pipeline step `detect` (see lakemeta.pipeline)."""

import sys

from lakemeta.steps import main

if __name__ == "__main__":
    main("detect", sys.argv[1:])
