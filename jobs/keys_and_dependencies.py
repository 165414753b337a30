"""spark-submit entry point: the pipeline step `keys_and_dependencies` (see lakemeta.pipeline)."""

import sys

from lakemeta.steps import main

if __name__ == "__main__":
    main("keys_and_dependencies", sys.argv[1:])
