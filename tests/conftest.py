"""Shared fixtures: one local Spark session per test run, paths to the shared development data."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from lakemeta.reference import s3_server as s3_server_module
from lakemeta.reference.s3_server import S3Server
from lakemeta.storage import Location

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: `make test-fast` relies on the markers added here
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark what needs a JVM or Airflow, whether or not its file says so: a test under tests/spark or taking
    the ``spark`` fixture is ``spark``, one under tests/dags ``airflow``; so ``-m "not spark and not
    airflow"`` selects exactly the tests that need neither.

    Then tests marked ``slow`` (the Airflow run, the whole-pipeline state tests) first: pytest-xdist's
    ``loadfile`` gives the first file to one worker and the second to the other, then each a third, and
    the rest as they free up; so the two longest files start at once, side by side, instead of last."""
    for item in items:
        folder = item.path.relative_to(REPO / "tests").parts[0]
        if folder == "spark" or "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
        if folder == "dags":
            item.add_marker(pytest.mark.airflow)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip("development data ../shared/data is absent (a user's clone); CI has it")
    return SHARED_DATA


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server | None]:
    """The S3-compatible server of the run (tests/s3_server.py), None where it is not built (a user's clone
    without `make test`; CI builds it). Started before the Spark session, so that the session and its
    workers see the AWS variables that point at it."""
    if not s3_server_module.BINARY.exists():
        yield None
        return
    with s3_server_module.start(tmp_path_factory.mktemp("s3")) as server:
        yield server


@pytest.fixture(scope="session")
def s3(s3_server: S3Server | None) -> S3Server:
    if s3_server is None:
        pytest.skip(
            f"no S3 server at {s3_server_module.BINARY}: `make test` builds it (infra/install-s3-server.sh)"
        )
    return s3_server


@pytest.fixture(params=["local", "s3"])
def root(request: pytest.FixtureRequest, tmp_path: Path) -> Location:
    """A fresh folder on local disk, then a fresh prefix in the S3 server: a test taking it runs on both."""
    if request.param == "local":
        return Location.parse(tmp_path)
    return Location.parse(request.getfixturevalue("s3").prefix(request.node.name.split("[")[0][:40]))


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory, s3_server: S3Server | None) -> Iterator[object]:
    """One local Spark session for the whole run: starting one costs about five seconds. It reads and
    writes the S3 server's bucket too, when there is one."""
    from lakemeta.spark import get_session

    os.environ.setdefault("LAKEMETA_DRIVER_MEMORY", "3g")
    buckets = [Location.parse(f"s3://{s3_server_module.BUCKET}")] if s3_server else []
    session = get_session(
        "local[2]",
        "lakemeta tests",
        catalog=tmp_path_factory.mktemp("spark-catalog"),
        locations=buckets,
        extra_conf={
            # The suite keeps both cores busy, so the collector's CPU is the tests' time: over a tiny
            # lake's later runs G1's threads took 2-4.5 CPU seconds a run, the throughput collector's one.
            "spark.driver.defaultJavaOptions": "-XX:+UseParallelGC",
            # Expressions evaluated, not compiled (Spark's own suites run both ways): over rows by the
            # dozen, generating each task's projection code cost more than running it (a JFR profile:
            # 19 % of the driver's samples in UnsafeProjection.create, 13 % in the regex that measures
            # the generated code), and each test plans new shapes. Its first incremental run took 37 CPU
            # seconds against 53, the crash tests 262 s against 294. The results are the same; the
            # Connect servers (tests/dags/test_airflow_running.py on the cluster,
            # tests/spark/spark/test_portable.py) and the drivers tests start in processes of their own keep
            # code generation, and the cluster's catalog is compared with this session's.
            "spark.sql.codegen.factoryMode": "NO_CODEGEN",
            "spark.sql.codegen.wholeStage": "false",
        },
    )
    yield session
    session.stop()
