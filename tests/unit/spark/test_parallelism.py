"""How many tasks a stage is cut into, by master (no JVM): twice the cores of a local master, nothing fixed
on a cluster's, whose executors' cores and adaptive query execution decide."""

from __future__ import annotations

import os

import pytest

from lakemeta.config import Config
from lakemeta.spark.connect import server_command
from lakemeta.spark.session import local_cores, parallelism_conf, spark_conf


@pytest.mark.parametrize(
    ("master", "cores"),
    [
        ("local", 1),
        ("local[2]", 2),
        ("local[16]", 16),
        ("local[4,3]", 4),
        ("local[*]", os.cpu_count()),
        ("local-cluster[2,1,1024]", 2),
        ("spark://master:7077", None),
        (None, None),
    ],
)
def test_the_cores_of_a_master(master: str | None, cores: int | None) -> None:
    assert local_cores(master) == cores


def test_a_local_master_gets_twice_its_cores_and_a_cluster_no_constant() -> None:
    assert parallelism_conf("local[2]") == {
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "4",
    }
    assert parallelism_conf("local[8]")["spark.sql.shuffle.partitions"] == "16"
    on_a_cluster = spark_conf(master="spark://master:7077")
    assert (
        "spark.sql.shuffle.partitions" not in on_a_cluster and "spark.default.parallelism" not in on_a_cluster
    )
    assert on_a_cluster["spark.sql.adaptive.enabled"] == "true"  # which coalesces the 200 shuffle partitions


def test_the_connect_server_of_a_cluster_leaves_parallelism_to_the_cluster(tmp_path) -> None:
    def confs(master: str) -> dict[str, str]:
        command = server_command(Config(lake=tmp_path / "l", catalog=tmp_path / "c", spark_master=master))
        pairs = [command[i + 1] for i, part in enumerate(command) if part == "--conf"]
        return dict(pair.split("=", 1) for pair in pairs)

    assert "spark.sql.shuffle.partitions" not in confs("spark://master:7077")
    assert confs("local[2]")["spark.sql.shuffle.partitions"] == "4"
