"""The learned FK score (``model``) and its training (``training``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lakemeta.fks import model
from lakemeta.fks.choice import with_features
from lakemeta.fks.training import _best_threshold, canonical, model_features


def test_the_fit_recovers_a_known_logistic_model() -> None:
    rng = np.random.default_rng(3)
    x = np.column_stack([rng.normal(2.0, 1.5, 40_000), rng.integers(0, 2, 40_000)])
    true_weights, true_intercept = np.array([1.5, -2.0]), -0.5
    log_odds = true_intercept + x @ true_weights
    y = (rng.random(len(x)) < 1 / (1 + np.exp(-log_odds))).astype(float)
    fitted = model.fit(("a", "b"), x, y, l2=0.0)
    assert np.allclose(fitted.weights, true_weights, atol=0.08)
    # the intercept is the log-odds at the features' means
    assert fitted.intercept == pytest.approx(true_intercept + np.array(fitted.means) @ true_weights, abs=0.08)
    assert fitted.means == pytest.approx(tuple(x.mean(axis=0)))


def test_contributions_add_up_to_the_score() -> None:
    scoring = model.LogisticModel(("coverage", "inclusion"), (2.0, -1.0), (0.5, 0.9), 0.25, 0.5)
    rows = pa.table({"coverage": [0.75, 0.5], "inclusion": [1.0, 0.9]})
    terms = scoring.contributions(rows)
    assert np.allclose(terms, [[0.5, -0.1], [0.0, 0.0]])
    expected = 1 / (1 + np.exp(-(terms.sum(axis=1) + 0.25)))
    assert scoring.scores(rows) == pytest.approx(expected)


@pytest.mark.parametrize("name_signal", [True, False])
def test_the_packaged_models_know_their_features(name_signal: bool) -> None:
    packaged = model.load(name_signal)
    assert packaged.features == model_features(name_signal)
    assert len(packaged.weights) == len(packaged.means) == len(packaged.features)
    assert 0 < packaged.threshold < 1
    assert name_signal or not model.NAME_FEATURES & set(packaged.features)


def test_a_composite_fk_is_the_same_whatever_its_columns_order() -> None:
    assert canonical(("t", ("b", "a"), "k", ("y", "x"))) == canonical(("t", ("a", "b"), "k", ("x", "y")))
    assert canonical(("t", ("b", "a"), "k", ("y", "x"))) == ("t", ("a", "b"), "k", ("x", "y"))


def test_the_threshold_maximises_the_f1_of_the_choices() -> None:
    from lakemeta.config import FkConfig

    def row(fk: str, label: bool, coverage: float) -> dict:
        return {
            "fk_table": "s/t", "fk_columns": [fk], "pk_table": "s/k", "pk_columns": ["id"], "emd": 0.1,
            "inclusion": 1.0, "coverage": coverage, "fk_distinct": 5, "pk_distinct": 10, "span_start": 0.0,
            "span_end": 1.0, "pk_is_integer": True, "pk_is_range": True, "fk_step": 1, "fk_is_key": False,
            "pk_ordinal": 0, "tables_overlap": False, "keys_both_ways": False, "label": label,
        }  # fmt: skip

    rows = [row("a", True, 0.9), row("b", True, 0.8), row("c", False, 0.3), row("d", True, 0.2)]
    scoring = model.LogisticModel(("coverage",), (10.0,), (0.5,), 0.0, 0.5)
    featured = with_features(pa.Table.from_pylist(rows), FkConfig())
    # accepting the two best gives F1 4/5, the three best 4/6, all four 6/7: the best
    threshold = _best_threshold(featured, FkConfig(), scoring, true=3)
    assert threshold == pytest.approx(1 / (1 + np.exp(-10 * (0.2 - 0.5))))
