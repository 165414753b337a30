"""Training the FK score (``model``) on labelled lakes, and its cross-validation by database.

A labelled lake is a catalog's stored candidates (``fk_candidates`` and ``table_overlaps``) with the true
FKs of its tables and a group per table (its database: the folder of a development database, a TPC
schema). Each candidate's features are what the choice computes (``choice.choose``), its label whether it
is a true FK. The logistic regression is fitted on every candidate (``model.fit``); the threshold is the
score from which accepting each dependent's choice gives the best micro F1 on the training lakes: the
choice per dependent is part of what is trained for, not only the score.

Cross-validation holds out whole groups: each fold's model never saw a held-out database's FKs, and the
figures reported (micro F1, the median of the per-database F1, the databases below F1 0.5) are of the
held-out choices only.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.arrays import mapped
from lakemeta.config import FkConfig
from lakemeta.fks.choice import choose_featured, one_way, stored_signals, with_features, with_pair_flags
from lakemeta.fks.model import FEATURES, NAME_FEATURES, LogisticModel, feature_matrix, fit

ForeignKey = tuple[str, tuple[str, ...], str, tuple[str, ...]]


def identity(row: dict) -> ForeignKey:
    """A candidate's (fk_table, fk_columns, pk_table, pk_columns), a composite one's column pairs in the
    order of the key's columns' names (the same FK, whichever order its columns were found in)."""
    pairs = sorted(zip(row["pk_columns"], row["fk_columns"], strict=True))
    return (
        row["fk_table"],
        tuple(fk for _, fk in pairs),
        row["pk_table"],
        tuple(pk for pk, _ in pairs),
    )


def canonical(fk: ForeignKey) -> ForeignKey:
    """``identity`` of a foreign key given as a tuple."""
    return identity({"fk_table": fk[0], "fk_columns": fk[1], "pk_table": fk[2], "pk_columns": fk[3]})


@dataclass
class LabelledLake:
    """A catalog's stored candidates and overlaps, the true FKs among its tables, and each table's group
    (``group_of``: its database)."""

    candidates: pa.Table
    overlaps: pa.Table
    truth: set[ForeignKey]
    group_of: Callable[[str], str]


def labelled_rows(lakes: Iterable[LabelledLake], config: FkConfig) -> tuple[pa.Table, dict[str, set]]:
    """Every candidate of the lakes with its features (``choice.with_features``), ``group`` and
    ``label``; and the true FKs per group (a group without candidates keeps its FKs: they count as
    missed)."""
    tables: list[pa.Table] = []
    truth: dict[str, set] = {}
    for lake in lakes:
        truth_here = {canonical(fk) for fk in lake.truth}
        featured = with_features(with_pair_flags(stored_signals(lake.candidates), lake.overlaps), config)
        dependents = featured.select(["fk_table", "fk_columns", "pk_table", "pk_columns"]).to_pylist()
        groups = [lake.group_of(row["fk_table"]) for row in dependents]
        labels = [identity(row) in truth_here for row in dependents]
        tables.append(
            featured.append_column("group", pa.array(groups, pa.string())).append_column(
                "label", pa.array(labels, pa.bool_())
            )
        )
        for fk in truth_here:
            truth.setdefault(lake.group_of(fk[0]), set()).add(fk)
        for group in groups:
            truth.setdefault(group, set())
    return pa.concat_tables(tables, promote_options="permissive"), truth


def model_features(name_signal: bool) -> tuple[str, ...]:
    """The features of the model with names, or without."""
    return tuple(name for name in FEATURES if name_signal or name not in NAME_FEATURES)


def accepted(rows: pa.Table, config: FkConfig, scoring: LogisticModel) -> set[ForeignKey]:
    """The candidates (``labelled_rows``') the choice accepts under ``scoring``."""
    chosen = one_way(choose_featured(rows, config, scoring))
    found = chosen.filter(pc.fill_null(pc.equal(chosen["answer_set"], 1), False))
    return {
        identity(row)
        for row in found.select(["fk_table", "fk_columns", "pk_table", "pk_columns"]).to_pylist()
    }


def _best_threshold(rows: pa.Table, config: FkConfig, scoring: LogisticModel, true: int) -> float:
    """The threshold at which accepting the dependents' choices gives the best micro F1 (``true`` FKs in
    all): the choices are those of threshold 0, each accepted from its score on."""
    # one way only at threshold 0 is one way at any: of a pair accepted both ways, the better scored is
    # accepted from its own score on, the other never
    chosen = one_way(choose_featured(rows, config, scoring.with_threshold(0.0)))
    chosen = chosen.filter(pc.fill_null(pc.equal(chosen["answer_set"], 1), False))
    labels = chosen["label"].to_numpy(zero_copy_only=False)
    order = np.lexsort((~labels, -chosen["score"].to_numpy()))  # at one score, the true FKs first
    hits = np.cumsum(labels[order])
    if not len(hits):
        return 0.5
    # accepting every choice from each score on, walking down from the highest
    f1 = 2 * hits / (np.arange(1, len(hits) + 1) + true)
    return float(chosen["score"].to_numpy()[order][int(np.argmax(f1))])


def train(rows: pa.Table, truth: dict[str, set], config: FkConfig, l2: float = 1.0) -> LogisticModel:
    """The model fitted on ``rows`` (``labelled_rows``'; ``config.name_signal`` choosing its features), its
    threshold tuned."""
    features = model_features(config.name_signal)
    x = feature_matrix(rows, list(features))
    y = rows["label"].to_numpy(zero_copy_only=False).astype(np.float64)
    scoring = fit(features, x, y, l2)
    true = sum(len(truth[group]) for group in set(rows["group"].to_pylist()) | set(truth))
    return scoring.with_threshold(_best_threshold(rows, config, scoring, true))


def scores(found: set[ForeignKey], truth: dict[str, set], group_of: Callable[[str], str]) -> dict:
    """Micro precision, recall and F1 of ``found`` against ``truth``, the median per-group F1 over the
    groups with true FKs, the groups below F1 0.5, and each group's figures."""
    per_group = {}
    for group, true in sorted(truth.items()):
        mine = {fk for fk in found if group_of(fk[0]) == group}
        hits = len(mine & true)
        per_group[group] = {"true": len(true), "accepted": len(mine), "hits": hits}
        if true:
            per_group[group]["f1"] = round(2 * hits / (len(mine) + len(true)), 4)
    hits = sum(g["hits"] for g in per_group.values())
    n_found = sum(g["accepted"] for g in per_group.values())
    n_true = sum(g["true"] for g in per_group.values())
    f1s = [g["f1"] for g in per_group.values() if "f1" in g]
    return {
        "fks_true": n_true,
        "accepted": n_found,
        "precision": round(hits / n_found, 4) if n_found else 0.0,
        "recall": round(hits / n_true, 4) if n_true else 0.0,
        "micro_f1": round(2 * hits / (n_found + n_true), 4) if n_found + n_true else 1.0,
        "median_group_f1": round(statistics.median(f1s), 4) if f1s else None,
        "groups_below_half": sum(f < 0.5 for f in f1s),
        "per_group": per_group,
    }


def cross_validate(
    rows: pa.Table,
    truth: dict[str, set],
    config: FkConfig,
    folds: int = 10,
    seed: int = 0,
    l2: float = 1.0,
) -> set[ForeignKey]:
    """The FKs accepted in each group by a model trained on the other folds' groups alone."""
    groups = sorted(truth)
    random.Random(seed).shuffle(groups)
    fold_of = {group: i % folds for i, group in enumerate(groups)}
    found: set[ForeignKey] = set()
    folds_of_rows = mapped(rows["group"], lambda group: fold_of.get(group, -1), pa.int64()).to_numpy()
    for fold in range(folds):
        training, held_out = rows.filter(folds_of_rows != fold), rows.filter(folds_of_rows == fold)
        trained = train(training, {g: t for g, t in truth.items() if fold_of[g] != fold}, config, l2)
        found |= accepted(held_out, config, trained)
    return found
