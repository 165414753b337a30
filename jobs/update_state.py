"""spark-submit entry point: the state component named by the first argument (lakemeta.steps.update_state)."""

import sys

from lakemeta.steps import update_state

if __name__ == "__main__":
    update_state(sys.argv[1:])
