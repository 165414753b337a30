"""spark-submit entry point: publish the audited catalog (see lakemeta.catalog.database)."""

import sys

from lakemeta.steps import publish

if __name__ == "__main__":
    publish(sys.argv[1:])
