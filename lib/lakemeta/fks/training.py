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

from lakemeta.config import FkConfig
from lakemeta.fks.choice import choose_per_dependent, stored_signals, with_pair_flags
from lakemeta.fks.model import FEATURES, NAME_FEATURES, LogisticModel, feature_matrix, fit

ForeignKey = tuple[str, tuple[str, ...], str, tuple[str, ...]]
_UNTRAINED = LogisticModel((), (), (), 0.0, 0.5)  # features only: the choice computes them whatever the model


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


def labelled_rows(lakes: Iterable[LabelledLake], config: FkConfig) -> tuple[list[dict], dict[str, set]]:
    """Every candidate of the lakes as the choice's row, with ``group`` and ``label``; and the true FKs per
    group (a group without candidates keeps its FKs: they count as missed)."""
    rows: list[dict] = []
    truth: dict[str, set] = {}
    for lake in lakes:
        truth_here = {canonical(fk) for fk in lake.truth}
        candidates = with_pair_flags(stored_signals(lake.candidates).to_pylist(), lake.overlaps)
        for row in choose_per_dependent(candidates, config, _UNTRAINED):
            row["group"] = lake.group_of(row["fk_table"])
            row["label"] = identity(row) in truth_here
            rows.append(row)
        for fk in truth_here:
            truth.setdefault(lake.group_of(fk[0]), set()).add(fk)
        for row in rows:
            truth.setdefault(row["group"], set())
    return rows, truth


def model_features(name_signal: bool) -> tuple[str, ...]:
    """The features of the model with names, or without."""
    return tuple(name for name in FEATURES if name_signal or name not in NAME_FEATURES)


def accepted(rows: list[dict], config: FkConfig, scoring: LogisticModel) -> set[ForeignKey]:
    """The candidates the choice accepts under ``scoring``."""
    return {identity(row) for row in choose_per_dependent(rows, config, scoring) if row["answer_set"] == 1}


def _best_threshold(rows: list[dict], config: FkConfig, scoring: LogisticModel, true: int) -> float:
    """The threshold at which accepting the dependents' choices gives the best micro F1 (``true`` FKs in
    all): the choices are those of threshold 0, each accepted from its score on."""
    open_choice = scoring.with_threshold(0.0)
    chosen = sorted(
        (row["score"], row["label"])
        for row in choose_per_dependent(rows, config, open_choice)
        if row["answer_set"] == 1
    )
    best, threshold, hits = -1.0, 0.5, 0
    # walking down from the highest score: accepting every choice from this score on
    for found, (score, label) in enumerate(reversed(chosen), start=1):
        hits += label
        f1 = 2 * hits / (found + true)
        if f1 > best:
            best, threshold = f1, score
    return float(threshold)


def train(rows: list[dict], truth: dict[str, set], config: FkConfig, l2: float = 1.0) -> LogisticModel:
    """The model fitted on ``rows`` (``config.name_signal`` choosing its features), its threshold tuned."""
    features = model_features(config.name_signal)
    x = feature_matrix(rows, list(features))
    y = np.array([row["label"] for row in rows], dtype=np.float64)
    scoring = fit(features, x, y, l2)
    true = sum(len(truth[group]) for group in {row["group"] for row in rows} | set(truth))
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
    rows: list[dict],
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
    for fold in range(folds):
        training = [row for row in rows if fold_of[row["group"]] != fold]
        held_out = [row for row in rows if fold_of[row["group"]] == fold]
        trained = train(training, {g: t for g, t in truth.items() if fold_of[g] != fold}, config, l2)
        found |= accepted(held_out, config, trained)
    return found
