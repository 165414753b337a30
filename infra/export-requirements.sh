#!/usr/bin/env bash
# The pinned requirement sets each machine installs, exported from uv.lock (`make lock` locks, then runs
# this): requirements.txt for development (`make setup`: everything), infra/production/requirements.txt for
# the Airflow machines (the library, extras `airflow` and `production`), infra/production/
# requirements-spark.txt for Spark's machines (the library's own dependencies: no Airflow on executors).
# With --check, nothing is written: it fails when uv.lock does not match pyproject.toml or a committed set
# differs from its export (tests/unit/infra/test_package.py).
# Usage: infra/export-requirements.sh [--check]
set -euo pipefail
repo_root=$(cd "$(dirname "$0")/.." && pwd)
uv="$repo_root/.venv/bin/uv"
check=${1:-}
cd "$repo_root"

export_set() {  # export_set FILE [uv export options]: the set FILE holds, with a header naming its source
    local file=$1
    shift
    local exported
    exported="# Exported from uv.lock by infra/export-requirements.sh (\`make lock\`): do not edit.
$("$uv" export --frozen --no-hashes --no-header --no-emit-project --quiet "$@")"
    if [ "$check" = --check ]; then
        if ! diff -u "$file" <(printf '%s\n' "$exported"); then
            echo "export-requirements: $file differs from uv.lock's export: run make lock" >&2
            return 1
        fi
    else
        printf '%s\n' "$exported" > "$file"
    fi
}

if [ "$check" = --check ]; then
    "$uv" lock --locked --offline --quiet
fi
export_set requirements.txt --all-extras
export_set infra/production/requirements.txt --extra airflow --extra production
export_set infra/production/requirements-spark.txt
