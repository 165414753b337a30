"""spark-submit entry point: publish the audited catalog (lakemeta.steps.publish_catalog)."""

import sys

from lakemeta.steps import publish_catalog

if __name__ == "__main__":
    publish_catalog(sys.argv[1:])
