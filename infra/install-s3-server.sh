#!/usr/bin/env bash
# The S3-compatible object store the tests run against (tests/s3_server.py starts it on 127.0.0.1):
# Versity Gateway (versitygw, Apache-2.0), an S3 server over a local folder, built once from its Go module
# into .cache/bin/versitygw. Its modules and build cache stay under .cache/go.
set -euo pipefail
repo_root=$(cd "$(dirname "$0")/.." && pwd)
version=v1.8.0
target="$repo_root/.cache/bin/versitygw"
stamp="$target.$version"
if [ -x "$target" ] && [ -e "$stamp" ]; then
    exit 0
fi
go=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
export GOPATH="$repo_root/.cache/go" GOMODCACHE="$repo_root/.cache/go/mod" GOCACHE="$repo_root/.cache/go/build"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local
module="github.com/versity/versitygw@$version"
"$go" mod download "$module"
# The module's own go.mod pins every dependency; it is built where it was downloaded (read-only sources).
# The build is the longest step of a fresh machine's set-up (CI's critical path), and a test server's speed
# does not show in the tests: pure Go (no cgo), no optimisation or inlining, no symbol tables. That took
# 87 s here where the default build took 114 s, with the tests against it no slower.
(
    cd "$GOMODCACHE/github.com/versity/versitygw@$version"
    CGO_ENABLED=0 "$go" build -trimpath -gcflags=all="-N -l" -ldflags="-s -w" -o "$target" ./cmd/versitygw
)
touch "$stamp"
echo "versitygw $version built: $target"
