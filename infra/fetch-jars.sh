#!/usr/bin/env bash
# Fetch lakemeta's JVM dependencies with their transitive ones from Maven Central, once: Delta Lake's into
# .cache/jars (infra/jvm/pom.xml) and Hadoop's S3A connector into .cache/jars/s3 (infra/jvm/s3/pom.xml).
# Afterwards no Spark session needs the network: lakemeta.spark lists these files in spark.jars.
# Usage: infra/fetch-jars.sh PYTHON   (the venv's python, used to find pyspark's bundled jars)
set -euo pipefail
repo_root=$(cd "$(dirname "$0")/.." && pwd)
python=${1:-"$repo_root/.venv/bin/python"}
target="$repo_root/.cache/jars"
# Beside the target, on its file system: the jars are moved into place, not copied again.
staging="$repo_root/.cache/jars-staging"
trap 'rm -rf "$staging"' EXIT

# A jar whose artifact pyspark already ships (scala-library, hadoop-client, jackson, parquet, ...) would
# put a second version of the same classes on the classpath; keep only what Spark lacks.
spark_jars=$("$python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
artifact() { basename "$1" .jar | sed -E 's/-[0-9][^-]*(-[A-Za-z0-9.]+)?$//'; }
declare -A shipped=()
for jar in "$spark_jars"/*.jar; do shipped[$(artifact "$jar")]=1; done

fetch() {  # fetch POM FOLDER: the POM's runtime dependencies that Spark lacks, into FOLDER
    rm -rf "$staging" && mkdir -p "$staging" "$2"
    mvn -q -B -f "$1" -Dmaven.repo.local="$repo_root/.cache/m2" \
        dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$staging"
    for jar in "$staging"/*.jar; do
        if [[ -z "${shipped[$(artifact "$jar")]:-}" ]]; then mv "$jar" "$2/"; fi
    done
}

rm -rf "$target"
fetch "$repo_root/infra/jvm/pom.xml" "$target"
fetch "$repo_root/infra/jvm/s3/pom.xml" "$target/s3"
echo "Delta jars in $target:"; ls "$target"
echo "S3A jars in $target/s3:"; ls "$target/s3"
