"""spark-submit entry point: the pipeline step `fk_candidates` (see lakemeta.pipeline)."""

import sys

from lakemeta.steps import main

if __name__ == "__main__":
    main("fk_candidates", sys.argv[1:])
