"""Which foreign-key candidates are accepted: a choice per dependent column within each schema graph, on the
signals of ``signals``, instead of Zhang's one answer set at the largest EMD jump over all candidates.

Zhang et al. (§5.2) rank one database's candidates by EMD_n and cut the list at its largest jump. A lake
holds many schemas, copies of tables and small integer ranges everywhere: the EMD values of true and false
candidates interleave, no global jump exists, and ``ranking.answer_set`` then accepts every candidate
(10,929 of 10,929 on TPC-H, TPC-DS and web tables in one lake). That rule stays as the baseline in
``bench/fk_candidates.py``. Here, as HoPF (Jiang & Naumann 2020) does, the choice is holistic over the
candidates of a schema, under constraints that real schemas obey:

1. **Ruled out before the choice** (``reason``): the two tables overlap (``overlaps``: copies, samples
   and extracts of one list are not references); the dependent is a key the key is included in as well
   (two tables numbered 1..N: the same values both ways give no direction, and a reference has one);
   the dependent is a one-column key of its own table and covers at least ``SAMPLE_COVERAGE`` of a
   one-column key (one-to-one: two numberings or code lists that happen to nest, TPC-DS's customer ids
   inside its time ids; a dozen stores' closing dates in a calendar stay candidates, and so do returns
   whose (item, ticket) is unique and references a sale's);
   the dependent has more distinct values than the key (at least the surplus would dangle: a longer
   numbering, TPC-DS's 10,436 week numbers "in" its 10,000 customer ids at θ = 0.95, or days of the
   month 1..31 in 30 promotions); the dependent counts from the key's first values (a one-column key
   of integers, and the dependent's values start in its first tenth and end before ``fks.prefix_share``
   of it, or hold every key value up to their largest and stop short of its end: a line number, a
   quantity or a counter inside any id column numbered from 1, where a reference would spread over the
   key, ``signals``); the dependent's integers, ``ROUND_VALUES`` or more, are all multiples of a step
   the key's are not (``fk_step``: amounts in round numbers, TPC-DS's purchase estimates in 500s inside
   customer ids); names differ while ``fks.require_name_match`` asks for §5.4's check.
2. **Each dependent column (or column combination) references at most one key.** Its candidates are
   ordered by: same folder of the lake first (a schema lives in a folder; a key in another schema is
   taken only when the dependent's own schema has none); then, when ``fks.name_signal`` is on, the name
   similarity; then EMD_n (Zhang's randomness, the mission's ranking); then coverage of the key; then the
   key's position in its table (keys come first). The first is the dependent's choice (``choice`` = 1);
   the others keep their place in that order. When the first two are told apart by nothing but their
   names (two keys 1..20 in TPC-DS's ship_mode and income_band), the choice is not accepted: answer set 2,
   ``reason`` naming the other. A column may
   still take part in a one-column and a composite FK (TPC-H's ``l_partkey``): they are different
   dependents.
3. **The choice is accepted** when the data make it a reference rather than an accident: its values are
   a random sample of the key (EMD_n at most ``fks.sample_emd``), or no other table of its schema has a
   key that can hold them (the only explanation left; TPC-DS's date keys, referenced by a few years of a
   two-century calendar, are far from a sample; a dependent of one value says nothing), or with
   ``fks.name_signal`` its name matches the key's wholly. A key in another folder needs the sample test,
   and must be more than a numbering 1..N: a coincidence across schemas has nothing else to vouch for
   it, and every schema numbers its rows from 1 (TPC-DS's order numbers 1..20,000 are a perfect sample of
   TPC-H's part keys).

Schema graphs are the connected components of the tables joined by candidates not ruled out, within one
folder; ``schema_graph`` names each by its first table. Each graph's answer sets are ranked: set 1 is the
accepted choices (``accepted``), set 2 adds every dependent's choice that was not accepted, the looser
reading an analyst may review (Zhang "proposes one or more answer sets").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa

from lakemeta.config import FkConfig
from lakemeta.fks.overlaps import joined_groups
from lakemeta.fks.ranking import names_match
from lakemeta.fks.signals import (
    SAMPLE_COVERAGE,
    both_ways,
    counts_from_first_values,
    folder,
    name_similarity,
)

ROUND_VALUES = 10
"""From this many distinct values on, a dependent whose integers share a divisor the key's do not is a
measure in round numbers: k random ids of the key share one with probability about 2^-k."""
CHOICE_COLUMNS = pa.schema(
    [
        ("same_folder", pa.bool_()),
        ("name_similarity", pa.float64()),
        ("name_match", pa.bool_()),
        ("schema_graph", pa.string()),
        ("choice", pa.int32()),
        ("answer_set", pa.int32()),
        ("reason", pa.string()),
        ("rank", pa.int32()),
        ("accepted", pa.bool_()),
    ]
)


# Set on each candidate before the choice from what relates it to others (``choose``, or in the
# executors ``fks.placement``): its two tables overlap; its reverse is a candidate too.
PAIR_FLAGS = pa.schema([("tables_overlap", pa.bool_()), ("keys_both_ways", pa.bool_())])


def _ruled_out(row: dict, config: FkConfig) -> str | None:
    """Why a candidate cannot be a foreign key whatever its alternatives, or None."""
    if row["fk_table"] != row["pk_table"] and row["tables_overlap"]:
        return "tables overlap"
    if row["keys_both_ways"]:
        return "keys included both ways"
    one_column = len(row["pk_columns"]) == 1  # a unique tuple of ids may well reference a composite key
    if (
        row["fk_is_key"]
        and one_column
        and row["fk_table"] != row["pk_table"]
        and row["coverage"] >= SAMPLE_COVERAGE
    ):
        return "the dependent is a key of its table"
    if row["fk_distinct"] > row["pk_distinct"]:
        return "more distinct values than the key"
    if counts_from_first_values(row, config.prefix_share):
        return "counts from the key's first values"
    if row["fk_step"] is not None and row["fk_step"] >= 2 and row["fk_distinct"] >= ROUND_VALUES:
        return f"multiples of {row['fk_step']}"
    if config.require_name_match and not row["name_match"]:
        return "names differ"
    return None


def _preference(row: dict, config: FkConfig) -> tuple:
    """The order of a dependent's candidates: the first is its choice (module docstring, 2)."""
    names = -round(row["name_similarity"], 6) if config.name_signal else 0.0
    return (
        row["ruled_out"],
        not row["same_folder"],
        names,
        round(row["emd"], 9),  # equal up to float rounding: no evidence either way
        -round(row["coverage"], 9),
        row["pk_ordinal"],
        row["pk_table"],
        row["pk_columns"],
    )


def _same_evidence(row: dict, other: dict, config: FkConfig) -> bool:
    """Whether two candidates of one dependent are told apart by nothing but their keys' names."""
    return _preference(row, config)[:-2] == _preference(other, config)[:-2]


def choose_per_dependent(rows: list[dict], config: FkConfig) -> list[dict]:
    """Each candidate (a row of ``SCORED`` with ``PAIR_FLAGS``) with its dependent's choice (module
    docstring, 1-3): ``CHOICE_COLUMNS`` but ``schema_graph``, ``rank`` and ``accepted``, and ``ruled_out``.
    A dependent's outcome depends on its own candidates alone, so the rows of any set of whole dependents
    (one task's, in the executors) are chosen alone."""
    for row in rows:
        row["same_folder"] = folder(row["fk_table"]) == folder(row["pk_table"])
        row["name_similarity"] = name_similarity(row["fk_columns"], row["pk_table"], row["pk_columns"])
        row["name_match"] = names_match(row["fk_columns"], row["pk_columns"])
        row["reason"] = _ruled_out(row, config)
        row["ruled_out"] = row["reason"] is not None
        row["answer_set"] = None
    by_dependent: dict[tuple, list[dict]] = {}
    for row in rows:
        by_dependent.setdefault((row["fk_table"], tuple(row["fk_columns"])), []).append(row)
    for alternatives in by_dependent.values():
        alternatives.sort(key=lambda r: _preference(r, config))
        for place, row in enumerate(alternatives, start=1):
            row["choice"] = place
            if row["reason"] is None and place > 1:
                row["reason"] = f"outranked by {alternatives[0]['pk_table']}"
        best = alternatives[0]
        if best["reason"] is not None:
            continue
        if len(alternatives) > 1 and _same_evidence(best, alternatives[1], config):
            best["reason"] = f"as likely {alternatives[1]['pk_table']}"
            best["answer_set"] = 2
            continue
        # tables, not keys: two keys of one table holding the same values (TPC-DS's t_time_sk and t_time)
        # are one explanation, and the key's position chose between them
        in_folder = len({r["pk_table"] for r in alternatives if r["same_folder"] and not r["ruled_out"]})
        sample = best["emd"] <= config.sample_emd
        if best["same_folder"]:
            only = in_folder == 1 and best["fk_distinct"] >= 2
            named = config.name_signal and best["name_similarity"] >= 1.0
            best["answer_set"] = 1 if sample or only or named else 2
            reason = "neither a sample of the key nor its schema's only key holding it"
        else:
            best["answer_set"] = 1 if sample and not best["pk_is_range"] else 2
            reason = "in another schema, and not a sample of a key other than a numbering 1..N"
        if best["answer_set"] == 2:
            best["reason"] = reason
    return rows


def graph_edges(rows: Iterable[dict]) -> Iterator[tuple[str, str]]:
    """The edges of the schema graphs: the tables joined by candidates not ruled out, within one folder;
    every dependent's table is a node."""
    for row in rows:
        yield row["fk_table"], row["fk_table"]
        if not row["ruled_out"] and row["same_folder"]:
            yield row["fk_table"], row["pk_table"]


def rank_order(row: dict) -> tuple:
    """The ranking's order: answer set 1 first, then set 2, then the rest, each by EMD_n."""
    return (
        row["answer_set"] or 3,
        row["emd"],
        row["fk_table"],
        row["fk_columns"],
        row["pk_table"],
        row["pk_columns"],
    )


def choose(scored: pa.Table, overlaps: pa.Table, config: FkConfig) -> pa.Table:
    """``scored`` (candidates and their signals) with the choice's columns (``CHOICE_COLUMNS``), ranked:
    answer set 1 first, then set 2, then the rest, each by EMD_n."""
    rows = scored.to_pylist()
    overlapping = {
        frozenset((left, right))
        for left, right in zip(
            overlaps["left_table"].to_pylist(), overlaps["right_table"].to_pylist(), strict=True
        )
    }
    reverse = both_ways(rows)
    for row in rows:
        row["tables_overlap"] = frozenset((row["fk_table"], row["pk_table"])) in overlapping
        identity = (row["fk_table"], tuple(row["fk_columns"]), row["pk_table"], tuple(row["pk_columns"]))
        row["keys_both_ways"] = identity in reverse
    choose_per_dependent(rows, config)
    graphs = joined_groups(graph_edges(rows))
    for row in rows:
        row["schema_graph"] = graphs[row["fk_table"]]
    rows.sort(key=rank_order)
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
        row["accepted"] = row["answer_set"] == 1
    schema = pa.schema(list(scored.schema) + list(CHOICE_COLUMNS))
    return pa.Table.from_pylist(rows, schema=schema)
