"""spark-submit entry point: the pipeline step `rebuild` (see lakemeta.pipeline)."""

import sys

from lakemeta.steps import main

if __name__ == "__main__":
    main("rebuild", sys.argv[1:])
