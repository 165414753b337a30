#!/usr/bin/env bash
# Fetch Delta Lake's JVM jars with their transitive dependencies from Maven Central into .cache/jars,
# once. Afterwards no Spark session needs the network: lakemeta.spark lists these files in spark.jars.
# Usage: infra/fetch-jars.sh PYTHON   (the venv's python, used to find pyspark's bundled jars)
set -euo pipefail
repo_root=$(cd "$(dirname "$0")/.." && pwd)
python=${1:-"$repo_root/.venv/bin/python"}
target="$repo_root/.cache/jars"
staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT

mvn -q -B -f "$repo_root/infra/jvm/pom.xml" \
    -Dmaven.repo.local="$repo_root/.cache/m2" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$staging"

# A jar whose artifact pyspark already ships (scala-library, hadoop-client, jackson, parquet, ...) would
# put a second version of the same classes on the classpath; keep only what Spark lacks.
spark_jars=$("$python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
artifact() { basename "$1" .jar | sed -E 's/-[0-9][^-]*(-[A-Za-z0-9.]+)?$//'; }
declare -A shipped=()
for jar in "$spark_jars"/*.jar; do shipped[$(artifact "$jar")]=1; done

rm -rf "$target" && mkdir -p "$target"
for jar in "$staging"/*.jar; do
    if [[ -z "${shipped[$(artifact "$jar")]:-}" ]]; then cp "$jar" "$target/"; fi
done
echo "Delta jars in $target:"; ls "$target"
