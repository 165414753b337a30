"""spark-submit entry point: the quality gate over the catalog (lakemeta.steps.audit_catalog); it opens no
Spark session, and prints the results' path for the publish job's --audit."""

import sys

from lakemeta.steps import audit_catalog

if __name__ == "__main__":
    print(audit_catalog(sys.argv[1:]))
