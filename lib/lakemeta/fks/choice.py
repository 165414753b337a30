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
5. **One way only** (``one_way``): of two accepted candidates that are each other's reverse (keys included
   in one another, one-to-one), the better scored stays accepted and at equal scores neither; the other
   goes to answer set 2. It relates two dependents, so it runs after them, over the accepted alone.

A schema is a folder of the lake unless ``fks.schemas`` maps paths to schemas (``FkConfig.schema_of``);
``same_folder`` says whether the two tables are of one schema. Schema graphs are the connected components of
the tables joined by candidates not ruled out, within one schema; ``schema_graph`` names each by its first
table. Each graph's answer sets are ranked: set 1 is the accepted choices (``accepted``), set 2 adds every
dependent's choice that was not accepted, the looser reading an analyst may review (Zhang "proposes one or
more answer sets"). ``evidence`` names the features that moved the score most, with their terms of the
log-odds."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.arrays import mapped, positions, run_starts, shared_codes
from lakemeta.config import FkConfig
from lakemeta.fks import model
from lakemeta.fks.names import name_columns
from lakemeta.fks.overlaps import joined_groups
from lakemeta.fks.ranking import names_match
from lakemeta.fks.signals import both_ways, counts_from_first_values, filled, reverses, sides

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
_DIGITS = 9  # scores and EMD_n equal up to float rounding are no evidence either way


def _dependents(candidates: pa.Table) -> np.ndarray:
    """Each candidate's dependent (its table and columns) as an integer code."""
    [codes], _ = shared_codes(sides(candidates)[0])
    return codes


def _order_of(values: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Each string's place in their sorted distinct values (code point order, as Python compares them)."""
    [codes], distinct = shared_codes(values)
    places = np.empty(len(distinct), np.int64)
    places[pc.sort_indices(distinct).to_numpy()] = np.arange(len(distinct))
    return places[codes]


def _joined(lists: pa.ChunkedArray) -> pa.ChunkedArray:
    """Lists of column names as one string each, ordered as the lists are."""
    return pc.binary_join(lists, "\x1f")


def _per_dependent_features(
    dependent: np.ndarray,
    key_table: np.ndarray,
    open_: np.ndarray,
    same_folder: np.ndarray,
    similarity: np.ndarray,
) -> dict[str, np.ndarray]:
    """The features that place a candidate among its dependent's others (module docstring, 3): the only
    key of the folder, how many tables hold keys for it, and whether the names single it out. Tables,
    not keys: two keys of one table holding the same values (TPC-DS's t_time_sk and t_time) are one
    explanation."""
    n_dependents = int(dependent.max()) + 1 if len(dependent) else 0
    tables = int(key_table.max()) + 1 if len(key_table) else 1

    def tables_of(mask: np.ndarray) -> np.ndarray:
        pairs = np.unique(dependent[mask] * tables + key_table[mask])
        return np.bincount(pairs // tables, minlength=n_dependents)

    in_folder, open_tables = tables_of(open_ & same_folder), tables_of(open_)
    best = np.full(n_dependents, -np.inf)
    np.maximum.at(best, dependent[open_], similarity[open_])
    at_best = open_ & (similarity == best[dependent])
    times_best = np.bincount(dependent[at_best], minlength=n_dependents)
    return {
        "only_key_in_folder": same_folder & open_ & (in_folder[dependent] == 1),
        "key_tables": np.maximum(open_tables[dependent], 1),
        "best_named": at_best & (similarity > 0) & (times_best[dependent] == 1),
    }


def with_features(candidates: pa.Table, config: FkConfig) -> pa.Table:
    """The candidates (rows of ``SCORED`` with ``PAIR_FLAGS``) with every feature ``model`` reads, and what
    rules them out (``ruled_out``, ``reason``; module docstring, 1)."""
    columns = {
        "same_folder": pc.equal(
            mapped(candidates["fk_table"], config.schema_of, pa.string()),
            mapped(candidates["pk_table"], config.schema_of, pa.string()),
        ).to_numpy(zero_copy_only=False),
        **name_columns(candidates),
        "name_match": mapped(
            pc.binary_join_element_wise(
                _joined(candidates["fk_columns"]), _joined(candidates["pk_columns"]), "\x1e"
            ),
            lambda pair: names_match(*(side.split("\x1f") for side in pair.split("\x1e"))),
            pa.bool_(),
        ).to_numpy(zero_copy_only=False),
        "counts_from_first_values": counts_from_first_values(candidates, config.prefix_share),
    }
    overlapping = filled(candidates, "tables_overlap", False) & pc.not_equal(
        candidates["fk_table"], candidates["pk_table"]
    ).to_numpy(zero_copy_only=False)
    surplus = filled(candidates, "fk_distinct", 0) > filled(candidates, "pk_distinct", 0)
    unnamed = ~columns["name_match"] if config.require_name_match else np.zeros(candidates.num_rows, bool)
    reason = np.select(
        [overlapping, surplus, unnamed],
        ["tables overlap", "more distinct values than the key", "names differ"],
        "",
    )
    columns["ruled_out"] = reason != ""
    columns["reason"] = pa.array(np.where(columns["ruled_out"], reason, None), pa.string())
    [key_table], _ = shared_codes(candidates["pk_table"])
    columns.update(
        _per_dependent_features(
            _dependents(candidates),
            key_table,
            ~columns["ruled_out"],
            columns["same_folder"],
            columns["name_similarity"],
        )
    )
    featured = candidates.drop_columns([name for name in columns if name in candidates.schema.names])
    for name, values in columns.items():
        featured = featured.append_column(
            name, pa.array(values) if isinstance(values, np.ndarray) else values
        )
    return featured


def _evidence(terms: np.ndarray, features: tuple[str, ...]) -> pa.Array:
    """The features with the largest terms of each candidate's log-odds, signed (each distinct term
    formatted once)."""
    n, width = terms.shape
    order = np.argsort(-np.abs(terms), axis=1, kind="stable")[:, : min(_EVIDENCE, width)]
    names = pa.array(features, pa.string())
    parts = []
    for place in range(order.shape[1]):
        feature = order[:, place]
        value = terms[np.arange(n), feature]
        distinct, inverse = np.unique(value, return_inverse=True)
        signed = pa.array([f"{v:+.2f}" for v in distinct.tolist()], pa.string()).take(pa.array(inverse))
        text = pc.binary_join_element_wise(names.take(pa.array(feature)), signed, " ")
        parts.append(pc.if_else(pa.array(value != 0), text, pa.scalar(None, pa.string())))
    if not parts:
        return pa.array([""] * n, pa.string())
    return pc.binary_join_element_wise(*parts, ", ", null_handling="skip")


def choose_featured(
    featured: pa.Table, config: FkConfig, scoring: model.LogisticModel | None = None
) -> pa.Table:
    """The candidates with their features (``with_features``) scored and chosen (module docstring, 2-4):
    ``score``, ``evidence``, ``choice`` (the place among the dependent's candidates), ``answer_set`` and
    ``reason``. A dependent's outcome depends on its own candidates alone, so any set of whole dependents
    (one task's, in the executors) is chosen alone. ``scoring``: the packaged model of
    ``config.name_signal`` unless given (the training's)."""
    scoring = scoring or model.load(config.name_signal)
    threshold = scoring.threshold if config.min_score is None else config.min_score
    n = featured.num_rows
    terms = scoring.contributions(featured)
    score = scoring.probabilities(terms) if n else np.zeros(0)
    ruled_out = filled(featured, "ruled_out", False)
    dependent = _dependents(featured)
    # the preference within a dependent: not ruled out, score, EMD_n, coverage, the key's place in its
    # table, then the key's identity
    rounded = np.round(score, _DIGITS)
    order = np.lexsort(
        (
            _order_of(_joined(featured["pk_columns"])),
            _order_of(featured["pk_table"]),
            filled(featured, "pk_ordinal", 0),
            -np.round(filled(featured, "coverage", 0.0), _DIGITS),
            np.round(filled(featured, "emd", 1.0), _DIGITS),
            -rounded,
            ruled_out,
            dependent,
        )
    )
    first = run_starts(dependent[order])
    start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    place = np.empty(n, np.int64)
    place[order] = np.arange(n) - start + 1
    best = np.empty(n, np.int64)
    best[order] = order[start]  # each candidate's dependent's first
    second = np.full(n, -1)
    has_second = np.zeros(n, bool)
    follows = np.flatnonzero(~first)
    runner_up = follows[place[order[follows]] == 2]
    second[order[runner_up - 1]] = order[runner_up]
    has_second[order[runner_up - 1]] = True
    chosen = (place == 1) & ~ruled_out
    tied = chosen & has_second
    tied[tied] = (ruled_out[second[tied]] == ruled_out[tied]) & (rounded[second[tied]] == rounded[tied])
    accepted = chosen & ~tied & (score >= threshold)
    answer_set = np.where(accepted, 1, np.where(chosen, 2, 0))
    key_table = featured["pk_table"]
    reasons = (
        featured["reason"].combine_chunks()
        if isinstance(featured["reason"], pa.ChunkedArray)
        else featured["reason"]
    )
    outranked = pc.binary_join_element_wise("outranked by ", key_table.take(pa.array(best)), "")
    reasons = pc.if_else(pa.array((place > 1) & ~ruled_out), outranked, reasons)
    as_likely = pc.binary_join_element_wise(
        "as likely ", key_table.take(pa.array(np.where(tied, second, 0))), ""
    )
    reasons = pc.if_else(pa.array(tied), as_likely, reasons)
    below = chosen & ~tied & ~accepted
    low = pa.array(np.char.mod(f"score %.3f below {threshold:.3f}", score), pa.string())
    reasons = pc.if_else(pa.array(below), low, reasons)
    computed = {
        "score": pa.array(score, pa.float64()),
        "evidence": _evidence(terms, scoring.features),
        "choice": pa.array(place, pa.int32()),
        "answer_set": pa.array(answer_set, pa.int32(), mask=answer_set == 0),
        "reason": reasons,
    }
    chosen_table = featured.drop_columns([name for name in computed if name in featured.schema.names])
    for name, values in computed.items():
        chosen_table = chosen_table.append_column(name, values)
    return chosen_table


def choose_per_dependent(
    candidates: pa.Table, config: FkConfig, scoring: model.LogisticModel | None = None
) -> pa.Table:
    """The candidates (rows of ``SCORED`` with ``PAIR_FLAGS``) with their features and their dependents'
    choices (``with_features``, ``choose_featured``)."""
    return choose_featured(with_features(candidates, config), config, scoring)


def _in_rank_order(chosen: pa.Table) -> np.ndarray:
    """The ranking's order: answer set 1 first, then set 2, then the rest, each by score, then EMD_n, then
    the candidate's identity (as ``fks.in_executors`` sorts in Spark)."""
    return np.lexsort(
        (
            _order_of(_joined(chosen["pk_columns"])),
            _order_of(chosen["pk_table"]),
            _order_of(_joined(chosen["fk_columns"])),
            _order_of(chosen["fk_table"]),
            filled(chosen, "emd", 1.0),
            -filled(chosen, "score", 0.0),
            filled(chosen, "answer_set", 3),
        )
    )


def schema_graphs(chosen: pa.Table) -> dict[str, str]:
    """Each dependent's table and its schema graph's first table: the graphs join the tables of the
    candidates not ruled out within one schema; every dependent's table is a node."""
    joining = pc.and_(pc.invert(chosen["ruled_out"]), chosen["same_folder"])
    edges = (
        pa.table(
            {
                "fk_table": chosen["fk_table"],
                "joined": pc.if_else(joining, chosen["pk_table"], chosen["fk_table"]),
            }
        )
        .group_by(["fk_table", "joined"])
        .aggregate([])
    )
    return joined_groups(zip(edges["fk_table"].to_pylist(), edges["joined"].to_pylist(), strict=True))


def stored_signals(stored: pa.Table) -> pa.Table:
    """The candidates of a stored ``fk_candidates`` without what the choice computes (``PAIR_FLAGS``,
    ``CHOICE_COLUMNS``, ``first_run``): what ``choose`` reads, to choose them again."""
    dropped = {*CHOICE_COLUMNS.names, *PAIR_FLAGS.names, "first_run"}
    return stored.select([name for name in stored.schema.names if name not in dropped])


def overlapping(candidates: pa.Table, overlaps: pa.Table) -> np.ndarray:
    """For each candidate, the row of ``overlaps`` (``overlaps.SCHEMA``) of its two tables, or -1."""
    (fk, pk, left, right), tables = shared_codes(
        candidates["fk_table"], candidates["pk_table"], overlaps["left_table"], overlaps["right_table"]
    )
    size = max(len(tables), 1)
    return positions(
        np.minimum(fk, pk) * size + np.maximum(fk, pk),
        np.minimum(left, right) * size + np.maximum(left, right),
    )


def with_pair_flags(candidates: pa.Table, overlaps: pa.Table) -> pa.Table:
    """The candidates with their ``PAIR_FLAGS``, from the overlapping tables and the candidates themselves."""
    flags = {
        "tables_overlap": overlapping(candidates, overlaps) >= 0,
        "keys_both_ways": both_ways(candidates),
    }
    flagged = candidates.drop_columns([name for name in flags if name in candidates.schema.names])
    for name, values in flags.items():
        flagged = flagged.append_column(name, pa.array(values, pa.bool_()))
    return flagged


IDENTITY = ["fk_table", "fk_columns", "pk_table", "pk_columns"]


def demoted_reverses(accepted: pa.Table) -> pa.Table:
    """Of accepted candidates (``IDENTITY`` and ``score``; module docstring, 5), those left unaccepted
    because their reverse is accepted too: two keys included in one another hold one reference at most
    (a subtype's key references its supertype's, not both ways), so the better scored stays accepted and at
    equal scores neither does (two tables numbered 1..N whose ids match by name, told apart by nothing).
    ``IDENTITY`` and ``reason``."""
    found = reverses(accepted)
    has_reverse = found >= 0
    reverse = np.maximum(found, 0)
    score = np.round(filled(accepted, "score", 0.0), _DIGITS)
    tied = has_reverse & (score == score[reverse])
    demoted = has_reverse & (score <= score[reverse])
    other = accepted["fk_table"].take(pa.array(reverse))
    reason = pc.if_else(
        pa.array(tied),
        pc.binary_join_element_wise("as likely as its reverse from ", other, ""),
        pc.binary_join_element_wise("its reverse from ", other, " scores higher", ""),
    )
    return accepted.select(IDENTITY).append_column("reason", reason).filter(pa.array(demoted))


def one_way(chosen: pa.Table) -> pa.Table:
    """The chosen candidates (``choose_featured``'s) with ``demoted_reverses`` left in answer set 2."""
    accepted = chosen.filter(pc.fill_null(pc.equal(chosen["answer_set"], 1), False))
    demoted = demoted_reverses(accepted.select([*IDENTITY, "score"]))
    if not demoted.num_rows:
        return chosen
    at = pc.index_in(
        pc.binary_join_element_wise(*sides(chosen), "\x1d"),
        value_set=pc.binary_join_element_wise(*sides(demoted), "\x1d"),
    )
    hit = pc.is_valid(at)
    answer_set = pc.if_else(hit, pa.scalar(2, pa.int32()), chosen["answer_set"])
    reason = pc.if_else(hit, demoted["reason"].take(pc.fill_null(at, 0)), chosen["reason"])
    return chosen.set_column(
        chosen.schema.get_field_index("answer_set"), "answer_set", answer_set
    ).set_column(chosen.schema.get_field_index("reason"), "reason", reason)


def choose(
    scored: pa.Table, overlaps: pa.Table, config: FkConfig, scoring: model.LogisticModel | None = None
) -> pa.Table:
    """``scored`` (candidates and their signals) with the pair flags (``PAIR_FLAGS``) and the choice's
    columns (``CHOICE_COLUMNS``), ranked: answer set 1 first, then set 2, then the rest, each by score.
    ``scoring`` as ``choose_featured``'s."""
    chosen = one_way(choose_per_dependent(with_pair_flags(scored, overlaps), config, scoring))
    graphs = schema_graphs(chosen)
    chosen = chosen.append_column(
        "schema_graph", mapped(chosen["fk_table"], graphs.__getitem__, pa.string())
    ).take(pa.array(_in_rank_order(chosen)))
    chosen = chosen.append_column("rank", pa.array(np.arange(1, chosen.num_rows + 1), pa.int32()))
    chosen = chosen.append_column("accepted", pc.fill_null(pc.equal(chosen["answer_set"], 1), False))
    schema = pa.schema(list(scored.schema) + list(PAIR_FLAGS) + list(CHOICE_COLUMNS))
    return chosen.select(schema.names).cast(schema)
