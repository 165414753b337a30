"""A real S3-compatible object store for the tests and benchmarks: Versity Gateway
(``infra/install-s3-server.sh`` builds it into .cache/bin) serving a temporary folder on 127.0.0.1, with a
bucket. lakemeta reaches it as it reaches S3, through the standard AWS variables, which :func:`start` sets
in this process's environment (and so in every Spark JVM and Python worker it starts)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow.fs as pafs

from lakemeta.ports import free_port

REPO = Path(__file__).resolve().parents[3]
BINARY = REPO / ".cache" / "bin" / "versitygw"
BUCKET = "lakemeta-tests"
ACCESS_KEY, SECRET_KEY = "lakemeta-test", "lakemeta-test-secret-do-not-log"


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    folder: Path  # the folder the server keeps the bucket in

    def environment(self) -> dict[str, str]:
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
        }

    def prefix(self, label: str = "") -> str:
        """A fresh ``s3://`` prefix in the test bucket."""
        return f"s3://{BUCKET}/{label or 'test'}-{uuid.uuid4().hex[:10]}"


@contextmanager
def start(folder: Path) -> Iterator[S3Server]:
    """Run the server on a free loopback port until the block ends; the AWS variables point at it."""
    port = free_port()
    environment = {**os.environ, "ROOT_ACCESS_KEY": ACCESS_KEY, "ROOT_SECRET_KEY": SECRET_KEY}
    log = (folder / "server.log").open("w")
    data = folder / "data"
    data.mkdir()
    process = subprocess.Popen(
        [str(BINARY), "--port", f"127.0.0.1:{port}", "posix", str(data)],
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"versitygw did not start; see {folder / 'server.log'}")
            time.sleep(0.05)
        server = S3Server(f"http://127.0.0.1:{port}", data)
        pafs.S3FileSystem(
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            endpoint_override=f"127.0.0.1:{port}",
            scheme="http",
            region="us-east-1",
            allow_bucket_creation=True,
        ).create_dir(BUCKET)
        os.environ.update(server.environment())
        yield server
    finally:
        process.terminate()
        process.wait(10)
        log.close()
