"""spark-submit entry point: a joinable-table search (lakemeta.steps.joinable_search)."""

import sys

from lakemeta.steps import joinable_search

if __name__ == "__main__":
    joinable_search(sys.argv[1:])
