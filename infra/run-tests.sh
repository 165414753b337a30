#!/usr/bin/env bash
# The test suite as CI runs it (`make test`): lint, then every test. pytest's exit code 5 (no tests
# collected) is a failure here like any other non-zero code.
set -euo pipefail
cd "$(dirname "$0")/.."
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-$PWD/.cache/numba}
.venv/bin/ruff check lib jobs dags tests bench
mkdir -p test-output
# Two workers, each with its own Spark session, a test file's tests kept together: most of a Spark test's
# time is job scheduling and JVM round trips, so two of them share the two cores well. Files are handed out
# in collection order, where tests/conftest.py puts the slow ones first, so the longest start at once.
.venv/bin/python -m pytest -n "${LAKEMETA_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder \
    --junitxml=test-output/junit.xml "$@"
