#!/usr/bin/env bash
# `make setup`: the venv with every pinned package and lakemeta itself (editable), and Delta's jars from
# Maven Central into .cache/jars. The jars download beside the Python packages: both wait on the network.
# uv installs the packages (pinned itself): with an empty cache it took 35 s here where pip took 97 s.
# It byte-compiles every installed module once (--compile-bytecode; compileall over the same site-packages
# took 28 s here). Where the environment sets PYTHONDONTWRITEBYTECODE (this machine's does), Python never
# writes the .pyc files it compiles, so without them every process compiled each module it imports from
# source, every time: each Airflow task, Spark Python worker, CLI run and test worker. `import pandas` took
# 2.7 s against 0.8 s compiled, a DAG task's imports 10.8 s against 4.0 s. lakemeta's own modules (editable)
# are left as they are: compiled, importing lakemeta.scan and the pipeline took no measurably less.
# Usage: infra/setup.sh PYTHON   (the interpreter the venv is made from)
set -euo pipefail
repo_root=$(cd "$(dirname "$0")/.." && pwd)
python=${1:-python3}
venv="$repo_root/.venv"
uv_version=0.13.9

# What set-up needs, said before anything is installed: the pinned packages are resolved for Python 3.11,
# Spark and Delta run on a JDK 17+, Maven fetches Delta's jars.
missing=()
if ! "$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
    missing+=("Python 3.11 ($python is $("$python" --version 2>/dev/null || echo "not found"); give another with \
make setup PYTHON=/path/to/python3.11)")
fi
if ! java_version=$("${JAVA_HOME:+$JAVA_HOME/bin/}java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1) \
    || [ -z "$java_version" ] || [ "$java_version" -lt 17 ]; then
    missing+=("a JDK 17 or newer on the PATH (java: ${java_version:-not found})")
fi
command -v mvn > /dev/null || missing+=("Maven (mvn) on the PATH")
if [ ${#missing[@]} -gt 0 ]; then
    printf 'setup: missing %s\n' "${missing[@]}" >&2
    exit 2
fi

# In a process group of its own, so that a failed step below stops Maven too rather than leave it running.
setsid bash "$repo_root/infra/fetch-jars.sh" download &
jars=$!
trap 'kill -- -"$jars" 2>/dev/null || true' EXIT
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet "uv==$uv_version"
# requirements.txt: every package of uv.lock, the production extras (PostgreSQL drivers, the FAB auth
# manager) among them, which the deployment test runs (tests/dags/test_deployment.py).
"$venv/bin/uv" pip install --quiet --compile-bytecode --python "$venv/bin/python" -r "$repo_root/requirements.txt"
"$venv/bin/uv" pip install --quiet --python "$venv/bin/python" --no-deps -e "$repo_root"
# pyspark is a source distribution: where the package index answers without cache headers, uv fetches it
# again on every install and keeps each new build (about 1 GB with pyspark-client's) beside the old ones,
# which nothing reaches any more; one fresh set-up grew the cache from 2.8 to 5.1 GB, and 59 such builds
# once filled this machine's disk. Pruning removes only what uv itself can no longer reach.
"$venv/bin/uv" cache prune --quiet || echo "setup: uv cache prune failed; the installed venv is complete"
wait "$jars"
trap - EXIT
bash "$repo_root/infra/fetch-jars.sh" install "$venv/bin/python"
