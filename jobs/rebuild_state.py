"""spark-submit entry point: drop the state and recompute it (lakemeta.steps.rebuild_state)."""

import sys

from lakemeta.steps import rebuild_state

if __name__ == "__main__":
    rebuild_state(sys.argv[1:])
