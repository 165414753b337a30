"""Shared fixtures: one local Spark session per test run, paths to the shared development data."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` (the Airflow run, the whole-pipeline state tests) first: pytest-xdist's
    ``loadfile`` gives the first file to one worker and the second to the other, then each a third, and
    the rest as they free up; so the two longest files start at once, side by side, instead of last."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip("development data ../shared/data is absent (a user's clone); CI has it")
    return SHARED_DATA


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One local Spark session for the whole run: starting one costs about five seconds."""
    from lakemeta.spark import get_session

    os.environ.setdefault("LAKEMETA_DRIVER_MEMORY", "3g")
    session = get_session("local[2]", "lakemeta tests", catalog=tmp_path_factory.mktemp("spark-catalog"))
    yield session
    session.stop()
