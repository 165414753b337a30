"""Which foreign-key candidates are accepted: a choice per dependent column within each schema graph, on a
learned score (``model``) over the signals of ``signals`` and the names (``names``), instead of Zhang's one
answer set at the largest EMD jump over all candidates.

Zhang et al. (§5.2) rank one database's candidates by EMD_n and cut the list at its largest jump. A lake
holds many schemas, copies of tables and small integer ranges everywhere: the EMD values of true and false
candidates interleave, no global jump exists, and ``ranking.answer_set`` then accepts every candidate
(10,929 of 10,929 on TPC-H, TPC-DS and web tables in one lake). That rule stays as the baseline in
``bench/fk_candidates.py``. Here, as HoPF (Jiang & Naumann 2020) and Auto-BI (Lin et al. 2023) do, a local
score is kept under a choice over the candidates of a schema:

1. **Ruled out before the choice** (``reason``), by facts alone: the two tables overlap (``overlaps``:
   copies, samples and extracts of one list are not references); the dependent has more distinct values
   than the key (at least the surplus would dangle); and, when ``fks.require_name_match`` asks for §5.4's
   check, names that differ. What used to be hand rules here (keys included both ways, a dependent that is
   a key of its own table, a column counting from the key's first values, round numbers, a key in another
   folder) are features of the score now: each fired on true FKs of real databases (one-to-one tables, a
   lookup of ids 1..6 used as 1..4).
2. **The score** (``model``): a logistic regression's probability that the candidate is an FK, learned from
   declared FKs, with ``fks.name_signal`` choosing the model with names or without.
3. **Each dependent column (or column combination) references at most one key.** Its candidates not ruled
   out are ordered by score, then EMD_n, coverage and the key's position in its table; the first is its
   choice (``choice`` = 1). When the first two have the same score (two keys told apart by nothing the
   model sees), the choice is not accepted: answer set 2, ``reason`` naming the other. A column may still
   take part in a one-column and a composite FK (TPC-H's ``l_partkey``): they are different dependents.
4. **The choice is accepted** when its score reaches ``fks.min_score`` (by default the threshold the
   training chose, ``fk_model.json``).

Schema graphs are the connected components of the tables joined by candidates not ruled out, within one
folder; ``schema_graph`` names each by its first table. Each graph's answer sets are ranked: set 1 is the
accepted choices (``accepted``), set 2 adds every dependent's choice that was not accepted, the looser
reading an analyst may review (Zhang "proposes one or more answer sets"). ``evidence`` names the features
that moved the score most, with their terms of the log-odds.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa

from lakemeta.config import FkConfig
from lakemeta.fks import model
from lakemeta.fks.names import name_features
from lakemeta.fks.overlaps import joined_groups
from lakemeta.fks.ranking import names_match
from lakemeta.fks.signals import both_ways, counts_from_first_values, folder

CHOICE_COLUMNS = pa.schema(
    [
        ("same_folder", pa.bool_()),
        ("name_similarity", pa.float64()),
        ("name_match", pa.bool_()),
        ("name_equal", pa.bool_()),
        ("names_key_table", pa.bool_()),
        ("score", pa.float64()),
        ("evidence", pa.string()),
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
_EVIDENCE = 3  # features named in ``evidence``


def _ruled_out(row: dict, config: FkConfig) -> str | None:
    """Why a candidate cannot be a foreign key whatever its score, or None (facts only: module docstring)."""
    if row["fk_table"] != row["pk_table"] and row["tables_overlap"]:
        return "tables overlap"
    if row["fk_distinct"] > row["pk_distinct"]:
        return "more distinct values than the key"
    if config.require_name_match and not row["name_match"]:
        return "names differ"
    return None


def _preference(row: dict) -> tuple:
    """The order of a dependent's candidates: the first is its choice (module docstring, 3)."""
    return (
        row["ruled_out"],
        -round(row["score"], 9),
        round(row["emd"], 9),  # equal up to float rounding: no evidence either way
        -round(row["coverage"], 9),
        row["pk_ordinal"],
        row["pk_table"],
        row["pk_columns"],
    )


def _with_signals(row: dict, config: FkConfig) -> None:
    """The signals of a candidate the choice adds to the stored ones (``model.FEATURES``)."""
    names = name_features(row["fk_table"], row["fk_columns"], row["pk_table"], row["pk_columns"])
    row["same_folder"] = folder(row["fk_table"]) == folder(row["pk_table"])
    row["name_similarity"] = names.name_similarity
    row["name_equal"] = names.name_equal
    row["names_key_table"] = names.names_key_table
    row["fk_identifier"] = names.fk_identifier
    row["key_names_own_table"] = names.key_names_own_table
    row["fk_names_own_table"] = names.fk_names_own_table
    row["fk_table_extends_key_table"] = names.fk_table_extends_key_table
    row["key_table_extends_fk_table"] = names.key_table_extends_fk_table
    row["name_match"] = names_match(row["fk_columns"], row["pk_columns"])
    row["counts_from_first_values"] = row["span_start"] is not None and counts_from_first_values(
        row, config.prefix_share
    )
    row["reason"] = _ruled_out(row, config)
    row["ruled_out"] = row["reason"] is not None
    row["answer_set"] = None


def _evidence(terms: np.ndarray, features: tuple[str, ...]) -> str:
    """The features with the largest terms of a candidate's log-odds, signed."""
    order = np.argsort(-np.abs(terms), kind="stable")[:_EVIDENCE]
    return ", ".join(f"{features[i]} {terms[i]:+.2f}" for i in order if terms[i])


def choose_per_dependent(
    rows: list[dict], config: FkConfig, scoring: model.LogisticModel | None = None
) -> list[dict]:
    """Each candidate (a row of ``SCORED`` with ``PAIR_FLAGS``) with its dependent's choice (module
    docstring, 1-4): ``CHOICE_COLUMNS`` but ``schema_graph``, ``rank`` and ``accepted``, and ``ruled_out``.
    A dependent's outcome depends on its own candidates alone, so the rows of any set of whole dependents
    (one task's, in the executors) are chosen alone. ``scoring``: the packaged model of
    ``config.name_signal`` unless given (the training's)."""
    for row in rows:
        _with_signals(row, config)
    by_dependent: dict[tuple, list[dict]] = {}
    for row in rows:
        by_dependent.setdefault((row["fk_table"], tuple(row["fk_columns"])), []).append(row)
    for alternatives in by_dependent.values():
        # tables, not keys: two keys of one table holding the same values (TPC-DS's t_time_sk and t_time)
        # are one explanation
        in_folder = {r["pk_table"] for r in alternatives if r["same_folder"] and not r["ruled_out"]}
        open_tables = {r["pk_table"] for r in alternatives if not r["ruled_out"]}
        names = sorted((r["name_similarity"] for r in alternatives if not r["ruled_out"]), reverse=True)
        for row in alternatives:
            row["only_key_in_folder"] = row["same_folder"] and not row["ruled_out"] and len(in_folder) == 1
            row["key_tables"] = max(len(open_tables), 1)
            # the names single this key out among the dependent's others
            row["best_named"] = (
                not row["ruled_out"]
                and row["name_similarity"] > 0
                and row["name_similarity"] == names[0]
                and (len(names) == 1 or names[1] < names[0])
            )
    scoring = scoring or model.load(config.name_signal)
    threshold = scoring.threshold if config.min_score is None else config.min_score
    if rows:
        terms = scoring.contributions(rows)
        for row, score, row_terms in zip(rows, scoring.probabilities(terms), terms, strict=True):
            row["score"] = float(score)
            row["evidence"] = _evidence(row_terms, scoring.features)
    for alternatives in by_dependent.values():
        alternatives.sort(key=_preference)
        for place, row in enumerate(alternatives, start=1):
            row["choice"] = place
            if row["reason"] is None and place > 1:
                row["reason"] = f"outranked by {alternatives[0]['pk_table']}"
        best = alternatives[0]
        if best["reason"] is not None:
            continue
        if len(alternatives) > 1 and _preference(best)[:2] == _preference(alternatives[1])[:2]:
            best["reason"] = f"as likely {alternatives[1]['pk_table']}"
            best["answer_set"] = 2
            continue
        best["answer_set"] = 1 if best["score"] >= threshold else 2
        if best["answer_set"] == 2:
            best["reason"] = f"score {best['score']:.3f} below {threshold:.3f}"
    return rows


def graph_edges(rows: Iterable[dict]) -> Iterator[tuple[str, str]]:
    """The edges of the schema graphs: the tables joined by candidates not ruled out, within one folder;
    every dependent's table is a node."""
    for row in rows:
        yield row["fk_table"], row["fk_table"]
        if not row["ruled_out"] and row["same_folder"]:
            yield row["fk_table"], row["pk_table"]


def rank_order(row: dict) -> tuple:
    """The ranking's order: answer set 1 first, then set 2, then the rest, each by score, then EMD_n."""
    return (
        row["answer_set"] or 3,
        -row["score"],
        row["emd"],
        row["fk_table"],
        row["fk_columns"],
        row["pk_table"],
        row["pk_columns"],
    )


def stored_signals(stored: pa.Table) -> pa.Table:
    """The candidates of a stored ``fk_candidates`` without what the choice computes (``PAIR_FLAGS``,
    ``CHOICE_COLUMNS``, ``first_run``): what ``choose`` reads, to choose them again."""
    dropped = {*CHOICE_COLUMNS.names, *PAIR_FLAGS.names, "first_run"}
    return stored.select([name for name in stored.schema.names if name not in dropped])


def with_pair_flags(rows: list[dict], overlaps: pa.Table) -> list[dict]:
    """Candidate rows with their ``PAIR_FLAGS``, from the overlapping tables and the candidates themselves."""
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
    return rows


def choose(
    scored: pa.Table, overlaps: pa.Table, config: FkConfig, scoring: model.LogisticModel | None = None
) -> pa.Table:
    """``scored`` (candidates and their signals) with the pair flags (``PAIR_FLAGS``) and the choice's
    columns (``CHOICE_COLUMNS``), ranked: answer set 1 first, then set 2, then the rest, each by score.
    ``scoring`` as ``choose_per_dependent``'s."""
    rows = choose_per_dependent(with_pair_flags(scored.to_pylist(), overlaps), config, scoring)
    graphs = joined_groups(graph_edges(rows))
    for row in rows:
        row["schema_graph"] = graphs[row["fk_table"]]
    rows.sort(key=rank_order)
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
        row["accepted"] = row["answer_set"] == 1
    schema = pa.schema(list(scored.schema) + list(PAIR_FLAGS) + list(CHOICE_COLUMNS))
    return pa.Table.from_pylist(rows, schema=schema)
