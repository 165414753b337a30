"""Every command block of the README and docs/ (the fences marked ``bash``) runs as written, on a small lake
the test makes, or says here why it does not and which test runs it instead.

As written means line by line, in bash, from a folder holding what the blocks assume (``.venv`` of this
checkout, ``data/`` with the files the ingest names, ``demo-output/lake`` for the Airflow recipe); only the
placeholders are filled in: ``LAKE`` and ``CATALOG`` (folders of the test), ``[--option]`` (the option
given), an ISO time (now), the S3 bucket (the S3 server's), and the Connect server's port 15002 (a free
one, as ``LAKEMETA_CONNECT_PORT``: tests run side by side)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import write_deltalake

from lakemeta import __version__
from lakemeta.catalog.store import read_small
from lakemeta.ports import free_port
from lakemeta.storage import Location

from ..production import REPO

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# Blocks run elsewhere, by their first line, with where.
RUN_ELSEWHERE = {
    "make demo": "a fresh clone's `make demo` (the closing check of every change to the demo)",
    "bash infra/airflow/start.sh": "tests/dags/test_airflow_running.py starts Airflow with it",
    ".venv/bin/python bench/fk_relational.py --train": "a benchmark of about 12 minutes, not a test",
}
CLI, AIRFLOW_RECIPE, OBJECT_STORAGE = "the CLI's commands", "Airflow in one process", "object storage"


@dataclass(frozen=True)
class Block:
    document: str
    line: int
    lines: tuple[str, ...]

    @property
    def kind(self) -> str:
        first = self.lines[0]
        if first.startswith(".venv/bin/lakemeta ingest"):
            return CLI
        if first.startswith("source infra/airflow/env.sh"):
            return AIRFLOW_RECIPE
        if first.startswith("export AWS_REGION"):
            return OBJECT_STORAGE
        return next((why for command, why in RUN_ELSEWHERE.items() if first.startswith(command)), "")


def command_blocks() -> list[Block]:
    blocks = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for match in re.finditer(r"^```bash\n(.*?)^```", text, re.S | re.M):
            lines = tuple(line for line in match.group(1).splitlines() if line.strip())
            line = text[: match.start()].count("\n") + 2
            blocks.append(Block(str(document.relative_to(REPO)), line, lines))
    return blocks


def blocks_of(kind: str) -> list[Block]:
    return [block for block in command_blocks() if block.kind == kind]


def test_every_command_block_is_run_here_or_says_where() -> None:
    blocks = command_blocks()
    assert len(blocks) >= 8
    unplaced = [f"{b.document}:{b.line}: {b.lines[0]}" for b in blocks if not b.kind]
    assert not unplaced, "command blocks no test runs (run them here, or name the test in RUN_ELSEWHERE)"


def filled(line: str, values: dict[str, str]) -> str:
    """``line`` with the placeholders filled in (module docstring)."""
    line = re.sub(r"\[(--[a-z-]+)\]", r"\1", line)
    line = re.sub(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\b", "$(date -u +%Y-%m-%dT%H:%M:%S)", line)
    line = line.replace("15002", values["port"]).replace(
        "eu-west-1", os.environ.get("AWS_REGION", "eu-west-1")
    )
    line = line.replace("s3://bucket/", f"{values.get('bucket', 's3://bucket')}/")
    return re.sub(r"\b(LAKE|CATALOG)\b", lambda m: values[m.group(1)], line)


def small_files(folder: Path) -> None:
    """The files the CLI block ingests: orders (the joinable search's query), and web tables in a folder,
    a schema of their own, of which one references another."""
    rng = np.random.default_rng(7)
    (folder / "webtables").mkdir(parents=True)
    ids = np.arange(1, 301)
    pq.write_table(pa.table({"id": ids, "note": [f"order {i}" for i in ids]}), folder / "orders.parquet")
    customers = np.arange(1, 101)
    pq.write_table(
        pa.table({"customer_id": customers, "name": [f"customer {i}" for i in customers]}),
        folder / "webtables" / "customers.parquet",
    )
    pq.write_table(
        pa.table(
            {"purchase_id": ids, "customer_id": rng.choice(customers, 300), "qty": rng.integers(1, 9, 300)}
        ),
        folder / "webtables" / "purchases.parquet",
    )


def run_lines(lines: tuple[str, ...], values: dict[str, str], cwd: Path, env: dict[str, str]) -> list[str]:
    """Each line in bash from ``cwd``, failing on the first that fails; a line ending in ``&`` is started
    and left running (stopped when the test ends). The outputs, in order."""
    outputs = []
    for line in lines:
        command = filled(line, values)
        if re.search(r"&\s*(#.*)?$", command):
            background = subprocess.Popen(
                ["bash", "-c", command.split("#")[0].rstrip().removesuffix("&")],
                cwd=cwd, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )  # fmt: skip
            values.setdefault("background", []).append(background)
            outputs.append("")
            continue
        done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True)
        assert done.returncode == 0, (
            f"{command}\nexited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-4000:]}"
        )
        outputs.append(done.stdout)
    return outputs


def run_script(lines: tuple[str, ...], values: dict[str, str], cwd: Path, env: dict[str, str]) -> None:
    """The lines as one shell's (a server one starts is used by the next, an environment one sources or
    exports holds for the rest), stopping at the first that fails."""
    script = "set -e\n" + "\n".join(filled(line, values) for line in lines)
    log = (
        cwd / "commands.log"
    )  # a file, not a pipe: what a line leaves running (``&``) would hold a pipe open
    with log.open("w") as output:
        shell = subprocess.Popen(
            ["bash", "-c", script], cwd=cwd, env=env, stdout=output, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            shell.wait(timeout=1200)
        finally:
            with contextlib.suppress(ProcessLookupError):  # what the lines left running
                os.killpg(shell.pid, signal.SIGTERM)
    assert shell.returncode == 0, log.read_text()[-8000:]


@pytest.fixture
def workplace(tmp_path: Path) -> dict:
    """A folder to run the blocks from, with this checkout's venv, infra and DAGs, and what they fill in."""
    for part in (".venv", "infra", "dags"):
        (tmp_path / part).symlink_to(REPO / part)
    port = str(free_port())
    env = {**os.environ, "LAKEMETA_CONNECT_PORT": port, "AIRFLOW_HOME": str(tmp_path / "airflow")}
    env.pop("SPARK_CONNECT_AUTHENTICATE_TOKEN", None)
    values = {"LAKE": str(tmp_path / "lake"), "CATALOG": str(tmp_path / "catalog"), "port": port}
    yield {"cwd": tmp_path, "env": env, "values": values}
    for background in values.get("background", []):
        os.killpg(background.pid, signal.SIGTERM)
        background.wait(60)


def test_the_cli_commands_run_as_written(workplace: dict) -> None:
    (block,) = [b for b in blocks_of(CLI) if b.document == "docs/cli.md"]
    for other in blocks_of(CLI):  # the README's block is a part of the reference's
        assert set(other.lines) <= set(block.lines), f"{other.document}:{other.line} not in docs/cli.md"
    small_files(workplace["cwd"] / "data")
    outputs = dict(zip(block.lines, run_lines(block.lines, **workplace), strict=True))
    by_command = {line.split("#")[0].split("CATALOG", 1)[-1].strip(): out for line, out in outputs.items()}
    fks = json.loads(by_command["fk_candidates --format json"])
    accepted = {(r["fk_table"], tuple(r["fk_columns"]), r["pk_table"]) for r in fks if r["accepted"]}
    assert ("webtables/purchases", ("customer_id",), "webtables/customers") in accepted
    versions = {row["table_name"] for row in json.loads(by_command["published-versions --format json"])}
    assert "fk_candidates" in versions
    assert (workplace["cwd"] / "schemas.html").is_file()
    assert outputs[block.lines[-1]].split()[-1] == __version__


def test_the_airflow_recipe_runs_as_written(workplace: dict) -> None:
    blocks = blocks_of(AIRFLOW_RECIPE)
    assert len({b.lines for b in blocks}) == 1, "the README and docs/operations.md give the recipe apart"
    lake = workplace["cwd"] / "demo-output" / "lake"
    rng = np.random.default_rng(3)
    write_deltalake(str(lake / "shop" / "customers"), pa.table({"id": np.arange(1, 51)}))
    write_deltalake(
        str(lake / "shop" / "orders"),
        pa.table({"id": np.arange(1, 201), "customer": rng.integers(1, 51, 200)}),
    )
    run_script(blocks[0].lines, **workplace)
    catalog = workplace["cwd"] / "demo-output" / "catalog"
    fks = read_small(Location.parse(catalog), "fk_candidates").to_pylist()
    assert any(
        r["fk_table"] == "shop/orders" and r["pk_table"] == "shop/customers" and r["accepted"] for r in fks
    )


def test_the_object_storage_commands_run_as_written(workplace: dict, s3) -> None:
    (block,) = {b.lines: b for b in blocks_of(OBJECT_STORAGE)}.values()
    prefix = s3.prefix("documented")
    Location.parse(f"{prefix}/lake/shop/customers").write_delta(pa.table({"id": np.arange(1, 51)}))
    workplace["values"]["bucket"] = prefix
    run_script(block.lines, **workplace)
    published = Location.parse(f"{prefix}/lakemeta") / "tables"
    assert published.delta_dataset().to_table()["table_name"].to_pylist() == ["shop/customers"]
