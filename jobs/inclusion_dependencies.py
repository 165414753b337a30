"""spark-submit entry point: the pipeline step `inclusion_dependencies` (see lakemeta.pipeline)."""

import sys

from lakemeta.steps import main

if __name__ == "__main__":
    main("inclusion_dependencies", sys.argv[1:])
