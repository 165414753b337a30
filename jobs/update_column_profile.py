"""spark-submit entry point: the pipeline step `update_column_profile` (see lakemeta.pipeline)."""

import sys

from lakemeta.steps import main

if __name__ == "__main__":
    main("update_column_profile", sys.argv[1:])
