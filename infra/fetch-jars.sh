#!/usr/bin/env bash
# Fetch lakemeta's JVM dependencies with their transitive ones from Maven Central, once: Delta Lake's into
# .cache/jars (infra/jvm/pom.xml) and Hadoop's S3A connector into .cache/jars/s3 (infra/jvm/s3/pom.xml).
# Afterwards no Spark session needs the network: lakemeta.spark lists these files in spark.jars.
# Two steps, so that the download needs no venv and runs beside the Python packages' (infra/setup.sh):
#   infra/fetch-jars.sh download         every runtime dependency of both POMs into .cache/jars-staging
#   infra/fetch-jars.sh install PYTHON   those pyspark lacks into .cache/jars (PYTHON: the venv's python,
#                                        used to find pyspark's bundled jars)
set -euo pipefail
repo_root=$(cd "$(dirname "$0")/.." && pwd)
target="$repo_root/.cache/jars"
# Beside the target, on its file system: the jars are moved into place, not copied again.
staging="$repo_root/.cache/jars-staging"

download() {
    rm -rf "$staging"
    for pom in delta:infra/jvm/pom.xml s3:infra/jvm/s3/pom.xml; do
        mvn -q -B -f "$repo_root/${pom#*:}" -Dmaven.repo.local="$repo_root/.cache/m2" \
            dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$staging/${pom%%:*}"
    done
}

install() {
    local python=$1
    trap 'rm -rf "$staging"' EXIT
    # A jar whose artifact pyspark already ships (scala-library, hadoop-client, jackson, parquet, ...) would
    # put a second version of the same classes on the classpath; keep only what Spark lacks.
    local spark_jars
    spark_jars=$("$python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
    artifact() { basename "$1" .jar | sed -E 's/-[0-9][^-]*(-[A-Za-z0-9.]+)?$//'; }
    declare -A shipped=()
    for jar in "$spark_jars"/*.jar; do shipped[$(artifact "$jar")]=1; done
    rm -rf "$target"
    mkdir -p "$target/s3"
    for source in delta:"$target" s3:"$target/s3"; do
        for jar in "$staging/${source%%:*}"/*.jar; do
            if [[ -z "${shipped[$(artifact "$jar")]:-}" ]]; then mv "$jar" "${source#*:}/"; fi
        done
    done
    echo "Delta jars in $target:"; ls "$target"
    echo "S3A jars in $target/s3:"; ls "$target/s3"
}

case "${1:-}" in
    download) download ;;
    install) install "${2:?usage: infra/fetch-jars.sh install PYTHON}" ;;
    *) echo "usage: infra/fetch-jars.sh download | install PYTHON" >&2; exit 2 ;;
esac
