"""The learned score of a foreign-key candidate: a logistic regression over its signals (``signals``) and
its name features (``names``), whose coefficients are data (``fk_model.json``) made by one training
command (``bench/fk_relational.py --train``).

Zhang et al. rank by EMD_n alone (§5.2) and the choice first grew by hand rules with hand thresholds, each
written for one case (a counter inside an id range, a one-to-one copy, two tables numbered 1..N). On real
databases those rules fired on true FKs: one-to-one FKs, lookups of ids 1..6 used as 1..4, keys whose
names match. Peers that work on real schemas learn how to combine such signals (Rostin et al. 2009: a
classifier over name, value and cardinality features; Auto-BI, Lin et al. VLDB 2023: a local learned
classifier under a global choice). Here the hand rules become features, and a logistic regression learns
their weights from declared FKs (the development databases of ../shared/data/relational, TPC-H and
TPC-DS); ``choice`` keeps the one-key-per-dependent choice on top, and a hand rule only where it states a
fact.

Logistic regression, because its score splits into one contribution per feature (``contributions``):
``fk_candidates`` says which signals made a candidate's score, so an analyst sees why. Two models are kept:
``names`` (every feature) and ``values`` (names left out), for ``fks.name_signal`` on and off.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.fks.signals import filled

MODEL_FILE = Path(__file__).with_name("fk_model.json")
_GRID = 256.0  # EMD_n below one cell of the default grid is no evidence (``ranking.answer_set``)
_FEW_VALUES = 2  # a dependent of so few values says little of what it references
_ROUND_VALUES = 10  # ``choice.ROUND_VALUES``: from this many values on, a shared divisor is a measure's


def _flag(name: str) -> Callable[[pa.Table], np.ndarray]:
    return lambda t: filled(t, name, False).astype(np.float64)


def _log_emd(t: pa.Table) -> np.ndarray:
    return np.log(filled(t, "emd", 1.0) + 1.0 / _GRID)


def _span_width(t: pa.Table) -> np.ndarray:
    spanned = t["span_start"].is_valid().to_numpy(zero_copy_only=False) & t["span_end"].is_valid().to_numpy(
        zero_copy_only=False
    )
    return np.where(spanned, filled(t, "span_end", 1.0) - filled(t, "span_start", 0.0), 1.0)


def _round_numbers(t: pa.Table) -> np.ndarray:
    return ((filled(t, "fk_step", 0) >= 2) & (filled(t, "fk_distinct", 0) >= _ROUND_VALUES)).astype(
        np.float64
    )


FEATURES: dict[str, Callable[[pa.Table], np.ndarray]] = {
    # where the two tables are
    "same_folder": _flag("same_folder"),
    # the names (``names``)
    "name_equal": _flag("name_equal"),
    "name_similarity": lambda t: filled(t, "name_similarity", 0.0),
    "names_key_table": _flag("names_key_table"),
    "fk_identifier": _flag("fk_identifier"),
    "key_names_own_table": _flag("key_names_own_table"),
    "fk_names_own_table": _flag("fk_names_own_table"),
    "fk_table_extends_key_table": _flag("fk_table_extends_key_table"),
    "key_table_extends_fk_table": _flag("key_table_extends_fk_table"),
    # the values (``signals``)
    "log_emd": _log_emd,
    "coverage": lambda t: filled(t, "coverage", 0.0),
    "inclusion": lambda t: filled(t, "inclusion", 0.0),
    "few_values": lambda t: (filled(t, "fk_distinct", 0) <= _FEW_VALUES).astype(np.float64),
    "span_width": _span_width,
    "counts_from_first_values": _flag("counts_from_first_values"),
    "round_numbers": _round_numbers,
    "pk_is_integer": _flag("pk_is_integer"),
    "pk_is_range": _flag("pk_is_range"),
    # the keys and the tables (``candidates.with_key_signals``, ``overlaps``)
    "fk_is_key": _flag("fk_is_key"),
    # a key counting from the key's first values: two numberings 1..M and 1..N, nested by accident
    "key_counts_from_first_values": lambda t: (
        filled(t, "fk_is_key", False) & filled(t, "counts_from_first_values", False)
    ).astype(np.float64),
    "pk_first_column": lambda t: (filled(t, "pk_ordinal", -1) == 0).astype(np.float64),
    "composite": lambda t: (pc.list_value_length(t["pk_columns"]).to_numpy() > 1).astype(np.float64),
    "keys_both_ways": _flag("keys_both_ways"),
    # the candidate among its dependent's others (``choice``)
    "only_key_in_folder": _flag("only_key_in_folder"),
    "log_key_tables": lambda t: np.log(filled(t, "key_tables", 1).astype(np.float64)),
    "best_named": _flag("best_named"),
}
"""Each feature of the candidates (``choice``'s columns: the stored signals, the pair flags, the name
features and the dependent's others), as a number per candidate."""
NAME_FEATURES = frozenset(
    {
        "name_equal",
        "name_similarity",
        "names_key_table",
        "fk_identifier",
        "key_names_own_table",
        "fk_names_own_table",
        "fk_table_extends_key_table",
        "key_table_extends_fk_table",
        "best_named",
    }
)


def feature_matrix(candidates: pa.Table, names: list[str]) -> np.ndarray:
    """The features ``names`` of each candidate, a row per candidate."""
    columns = [FEATURES[name](candidates).astype(np.float64) for name in names]
    return np.column_stack(columns) if columns else np.zeros((candidates.num_rows, 0))


@dataclass(frozen=True)
class LogisticModel:
    """P(FK | features) = 1 / (1 + exp(-(intercept + weights · (features - means)))): ``means`` are the
    features' means over the training candidates, so that each term says how far a feature moves a
    candidate from the typical one (``contributions``); a candidate scoring at least ``threshold`` may be
    accepted (``choice``)."""

    features: tuple[str, ...]
    weights: tuple[float, ...]
    means: tuple[float, ...]
    intercept: float
    threshold: float

    def contributions(self, candidates: pa.Table) -> np.ndarray:
        """Each feature's term of each candidate's log-odds, a row per candidate."""
        values = feature_matrix(candidates, list(self.features))
        return (values - np.array(self.means)) * np.array(self.weights)

    def scores(self, candidates: pa.Table) -> np.ndarray:
        """Each candidate's probability of being an FK."""
        return self.probabilities(self.contributions(candidates))

    def probabilities(self, contributions: np.ndarray) -> np.ndarray:
        """The probabilities of rows whose ``contributions`` are given."""
        return 1.0 / (1.0 + np.exp(-(contributions.sum(axis=1) + self.intercept)))

    def with_threshold(self, threshold: float) -> LogisticModel:
        return LogisticModel(self.features, self.weights, self.means, self.intercept, threshold)

    def as_dict(self) -> dict:
        return {
            "features": list(self.features),
            "weights": [round(w, 6) for w in self.weights],
            "means": [round(m, 6) for m in self.means],
            "intercept": round(self.intercept, 6),
            "threshold": round(self.threshold, 6),
        }


def fit(
    features: tuple[str, ...], x: np.ndarray, y: np.ndarray, l2: float = 1.0, iterations: int = 50
) -> LogisticModel:
    """Logistic regression with an L2 penalty on the standardised weights, by Newton's method; the model's
    threshold is left at 0.5 (``training`` tunes it)."""
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    beta = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[0] = 0.0  # the intercept is not shrunk
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(z @ beta)))
        gradient = z.T @ (p - y) + penalty * beta
        hessian = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.max(np.abs(step)) < 1e-9:
            break
    weights = beta[1:] / scale
    return LogisticModel(features, tuple(map(float, weights)), tuple(map(float, mean)), float(beta[0]), 0.5)


def save(models: dict[str, LogisticModel], trained_on: dict, path: Path = MODEL_FILE) -> None:
    """The models and what they were trained on, as the JSON the package reads."""
    document = {"trained_on": trained_on, **{name: model.as_dict() for name, model in models.items()}}
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


@cache
def load(name_signal: bool, path: Path = MODEL_FILE) -> LogisticModel:
    """The packaged model: ``names`` when names are a signal, else ``values``."""
    stored = json.loads(path.read_text())["names" if name_signal else "values"]
    return LogisticModel(
        tuple(stored["features"]),
        tuple(stored["weights"]),
        tuple(stored["means"]),
        stored["intercept"],
        stored["threshold"],
    )
