"""n-ary joinable-table search over the Delta posting lists: the top-k equals a brute force over every table
and every column mapping (permuted columns, duplicate rows, nulls, one value spelt with different types);
results are stored once per query id; query tables load only from inside the lake."""

from __future__ import annotations

import datetime
import json
from itertools import permutations
from pathlib import Path

import deltalake
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pytest

from lakemeta.cli import main
from lakemeta.config import Config, IngestConfig, JoinSearchConfig
from lakemeta.joinsearch.discover import SCR, find_joinable, load_query_table
from lakemeta.joinsearch.normalise import normalise_values
from lakemeta.lake.ingest import IngestError, SourceFile, ingest
from lakemeta.lake.snapshots import read_table
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.storage import Location

from ..lake_changes import process

pytestmark = pytest.mark.spark

# Values longer than 15 bytes too: numpy keeps those outside a StringDType array's inline slots.
FIRST = ["ansel", "Muhammad", "HELMUT", "gretchen", "Anne-Marie  Élodie"]
LAST = ["adams", "Lee", "ali", "newton-hargreaves-smythe", "lee "]
COUNTRY = ["us", "UK", "Federal Republic of Germany"]


def entity(rng: np.random.Generator) -> tuple:
    return (
        FIRST[rng.integers(len(FIRST))],
        LAST[rng.integers(len(LAST))],
        COUNTRY[rng.integers(len(COUNTRY))],
        int(rng.integers(1, 5)),
    )


def as_type(numbers: list[int | None], kind: str) -> pa.Array:
    """One number column in one of three physical types; they normalise to the same values."""
    if kind == "int":
        return pa.array(numbers, pa.int64())
    if kind == "double":
        return pa.array([None if n is None else float(n) for n in numbers], pa.float64())
    return pa.array([None if n is None else f"0{n}" for n in numbers], pa.string())


def random_table(rng: np.random.Generator, entities: list[tuple]) -> pa.Table:
    """Rows drawn from ``entities`` (duplicates), some rows mixing two entities, nulls, an extra column,
    the columns in random order and the number in a random type."""
    rows = []
    for _ in range(int(rng.integers(4, 12))):
        row = list(entities[rng.integers(len(entities))])
        if rng.random() < 0.3:
            position = int(rng.integers(4))
            row[position] = entity(rng)[position] if rng.random() < 0.5 else None
        rows.append(row)
    columns = {
        "f": pa.array([r[0] for r in rows], pa.string()),
        "l": pa.array([r[1] for r in rows], pa.string()),
        "c": pa.array([r[2] for r in rows], pa.string()),
        "n": as_type([r[3] for r in rows], str(rng.choice(["int", "double", "str"]))),
        "extra": pa.array([str(rng.choice(FIRST + COUNTRY)) for _ in rows], pa.string()),
    }
    names = [str(n) for n in rng.permutation(list(columns))][: int(rng.integers(4, 6))]
    return pa.table({f"col_{i}_{name}": columns[name] for i, name in enumerate(names)})


def brute_force(lake: Path, tables: list[str], query: pa.Table, keys: list[str]) -> dict[str, int]:
    """J of Eq. 2 per table: the best injective mapping of the key columns, by enumeration."""
    normal = [normalise_values(query[k]).to_pylist() for k in keys]
    wanted = {t for t in zip(*normal, strict=True) if None not in t}
    scores = {}
    for name in tables:
        table = deltalake.DeltaTable(str(lake / name)).to_pyarrow_table()
        cells = [normalise_values(column).to_pylist() for column in table.columns]
        scores[name] = max(
            (
                len(wanted & {tuple(cells[c][r] for c in mapping) for r in range(table.num_rows)})
                for mapping in permutations(range(table.num_columns), len(keys))
            ),
            default=0,
        )
    return scores


def mapping_score(lake: Path, table_name: str, query: pa.Table, mapping: dict[str, str]) -> int:
    table = deltalake.DeltaTable(str(lake / table_name)).to_pyarrow_table()
    query_tuples = zip(*[normalise_values(query[k]).to_pylist() for k in mapping], strict=True)
    rows = zip(*[normalise_values(table[c]).to_pylist() for c in mapping.values()], strict=True)
    return len({t for t in query_tuples if None not in t} & set(rows))


@pytest.fixture(scope="module")
def searchable_lake(spark, tmp_path_factory) -> tuple[Pipeline, list[str], list[tuple]]:
    rng = np.random.default_rng(3)
    root = tmp_path_factory.mktemp("joinable")
    entities = [entity(rng) for _ in range(8)]
    names = [f"t{i}" for i in range(7)] + ["nested/empty"]
    for name in names[:-1]:
        deltalake.write_deltalake(str(root / "lake" / name), random_table(rng, entities))
    empty = pa.table({"f": pa.array([], pa.string())})
    deltalake.write_deltalake(str(root / "lake" / "nested" / "empty"), empty)
    pipeline = Pipeline(spark, Config(lake=root / "lake", catalog=root / "catalog"))
    process(pipeline, "posting_lists")
    return pipeline, names, entities


@pytest.mark.parametrize(("n_keys", "k"), [(2, 3), (3, 10)])
def test_top_k_equals_brute_force(searchable_lake, n_keys: int, k: int):
    pipeline, names, entities = searchable_lake
    rng = np.random.default_rng(n_keys)
    rows = [entities[i] for i in rng.integers(len(entities), size=6)] + [entity(rng), (None, "lee", "us", 1)]
    query = pa.table(
        {
            "country": [r[2] for r in rows],
            "given": [r[0] for r in rows],
            "number": as_type([r[3] for r in rows], "double"),
            "family": [r[1] for r in rows],
        }
    )
    keys = ["given", "family"] if n_keys == 2 else ["number", "given", "country"]
    search = (pipeline.catalog, pipeline.lake, query, keys, k, JoinSearchConfig().hash_bits, f"q{n_keys}")
    # The SCR baseline first: the MATE search's results are the ones left stored under the query id.
    scr = find_joinable(*search, scheme=SCR)
    mate = find_joinable(*search)
    matches = mate.matches
    assert scr.matches == matches
    # Both read the candidate rows of the initial column; MATE fetches the cells of those passing the
    # super-key filter only, SCR those of every one (rows here often hold one key value without the rest).
    assert mate.fetch.candidate_rows == scr.fetch.candidate_rows
    assert 0 < mate.fetch.rows_fetched < scr.fetch.rows_fetched == scr.fetch.candidate_rows
    # Step 1, the value lookup, reads the same files for both; step 3 reads at most SCR's.
    assert 0 < mate.fetch.lookup.files == scr.fetch.lookup.files
    assert 0 < mate.fetch.row_fetch.bytes <= scr.fetch.row_fetch.bytes
    assert mate.fetch.row_fetch.files <= scr.fetch.row_fetch.files
    assert mate.fetch.bytes_scanned == mate.fetch.lookup.bytes + mate.fetch.row_fetch.bytes
    truth = brute_force(pipeline.lake, names, query, keys)
    assert [m.joinability for m in matches] == sorted((j for j in truth.values() if j > 0), reverse=True)[:k]
    for match in matches:
        assert truth[match.table_name] == match.joinability
        assert list(match.column_mapping) == keys
        score = mapping_score(pipeline.lake, match.table_name, query, match.column_mapping)
        assert score == match.joinability
    stored = pipeline.catalog.read_small("joinable_tables").sort_by("rank").to_pylist()
    assert [
        (r["rank"], r["table_name"], r["joinability"], json.loads(r["column_mapping"]))
        for r in stored
        if r["query_id"] == f"q{n_keys}"
    ] == [(m.rank, m.table_name, m.joinability, m.column_mapping) for m in matches]


def test_a_repeated_query_replaces_its_results(searchable_lake):
    pipeline, _names, entities = searchable_lake
    query = pa.table({"a": [e[0] for e in entities], "b": [e[2] for e in entities]})
    search = (pipeline.catalog, pipeline.lake, query, ["a", "b"], 5, JoinSearchConfig().hash_bits, "again")
    first = find_joinable(*search).matches
    assert first
    best = first[0].table_name
    again = find_joinable(*search, exclude_tables=[best]).matches
    assert best not in {m.table_name for m in again}
    stored = pipeline.catalog.read_small("joinable_tables").filter(pc.field("query_id") == "again")
    assert sorted(stored["table_name"].to_pylist()) == sorted(m.table_name for m in again)


def test_requests_are_checked(searchable_lake):
    pipeline, _names, _entities = searchable_lake
    query = pa.table({"a": ["x"], "b": ["y"]})
    catalog, lake = pipeline.catalog, pipeline.lake
    with pytest.raises(ValueError, match="not in the query"):
        find_joinable(catalog, lake, query, ["a", "zz"], 3, JoinSearchConfig().hash_bits, "bad")
    with pytest.raises(ValueError, match="256"):
        find_joinable(catalog, lake, query, ["a", "b"], 3, 256, "bad")
    with pytest.raises(ValueError, match="query id"):
        find_joinable(catalog, lake, query, ["a", "b"], 3, JoinSearchConfig().hash_bits, "x' OR '1'='1")


def test_query_tables_load_only_from_inside_the_lake(spark, tmp_path: Path):
    lake = tmp_path / "lake"
    (lake / "queries").mkdir(parents=True)
    pa_csv.write_csv(pa.table({"id": [1, 2], "name": ["a", "b"]}), lake / "queries" / "q.csv")
    deltalake.write_deltalake(str(lake / "t"), pa.table({"x": ["1"]}))
    outside = tmp_path / "outside.csv"
    pa_csv.write_csv(pa.table({"id": [1]}), outside)
    (lake / "queries" / "link.csv").symlink_to(outside)

    root = Location.parse(lake)
    assert load_query_table(spark, root, "queries/q.csv").rows.to_pydict() == {
        "id": [1, 2],
        "name": ["a", "b"],
    }
    assert load_query_table(spark, root, lake / "queries" / "q.csv").rows.num_rows == 2
    from_table = load_query_table(spark, root, "t")
    assert (from_table.rows.to_pydict(), from_table.lake_table) == ({"x": ["1"]}, "t")
    for escaping in ("../outside.csv", str(outside), "queries/link.csv", "queries/../../outside.csv", "."):
        with pytest.raises(ValueError, match="not inside the lake"):
            load_query_table(spark, root, escaping)
    with pytest.raises(FileNotFoundError):
        load_query_table(spark, root, "queries/missing.csv")


def test_a_query_csv_is_typed_as_ingest_types_it(spark, tmp_path: Path):
    """A column keeps its inferred type only where every value written back as text is the text read, and
    the query's rows are the rows ingest stores from the same file; a record ingest would quarantine is an
    error naming it."""
    lake = tmp_path / "lake"
    lake.mkdir()
    (lake / "q.csv").write_text(
        "code,amount,day,at,n\n"
        "007,1.50,2024-01-01,2024-01-01T10:00:00,1\n"
        "012,2,2024-02-01,2024-02-01T11:30:00,2\n"
    )
    rows = load_query_table(spark, Location.parse(lake), "q.csv").rows
    assert rows.to_pydict() == {
        "code": ["007", "012"],  # leading zeros
        "amount": ["1.50", "2"],  # 1.50 read as 1.5
        "day": [datetime.date(2024, 1, 1), datetime.date(2024, 2, 1)],
        "at": ["2024-01-01T10:00:00", "2024-02-01T11:30:00"],  # written back with a space
        "n": [1, 2],
    }
    ingest(spark, lake, [SourceFile("q", lake / "q.csv", "csv")], IngestConfig())
    assert read_table(str(lake / "q")).to_pydict() == rows.to_pydict()
    text = load_query_table(spark, Location.parse(lake), "q.csv", IngestConfig(all_text=True)).rows
    assert all(pa.types.is_string(field.type) for field in text.schema)
    assert text["n"].to_pylist() == ["1", "2"]
    (lake / "bad.csv").write_text("a,b\n1,2\n3,4,5\n")
    with pytest.raises(IngestError, match=r"bad.csv: record '3,4,5'.*2 columns"):
        load_query_table(spark, Location.parse(lake), "bad.csv")


def test_the_cli_prints_and_stores_the_brute_force_top_k(searchable_lake, capsys):
    pipeline, names, _entities = searchable_lake
    query = deltalake.DeltaTable(str(pipeline.lake / "t0")).to_pyarrow_table()
    keys = query.column_names[:2]
    argv = ["joinable", "--lake", str(pipeline.lake), "--catalog", str(pipeline.catalog.root)]
    argv += ["--query", "t0", "--key", ",".join(keys), "--k", "3", "--query-id", "cli-test"]
    assert main(argv) == 0
    truth = brute_force(pipeline.lake, [n for n in names if n != "t0"], query, keys)  # t0 is left out
    stored = pipeline.catalog.read_small("joinable_tables").filter(pc.field("query_id") == "cli-test")
    ranked = stored.sort_by("rank").to_pylist()
    assert [r["joinability"] for r in ranked] == sorted((j for j in truth.values() if j > 0), reverse=True)[
        :3
    ]
    assert all(truth[r["table_name"]] == r["joinability"] for r in ranked)
    printed = capsys.readouterr().out
    assert all(f"J={r['joinability']}" in printed and r["table_name"] in printed for r in ranked)
