"""The answer set of the ranked candidates and the name check (Zhang §5.2, §5.4, ``ranking``)."""

from __future__ import annotations

import numpy as np
import pytest

from lakemeta.fks.ranking import answer_set, bare_name, names_match


def test_the_answer_set_ends_at_the_largest_jump():
    emd = np.array([0.0, 0.002, 0.004, 0.12, 0.13, 0.4])
    assert answer_set(emd, 256).tolist() == [True, True, True, False, False, False]
    assert answer_set(np.array([0.001, 0.002, 0.003]), 256).all()  # no doubling: no jump
    assert answer_set(np.array([0.3]), 256).tolist() == [True]
    with pytest.raises(ValueError):
        answer_set(np.array([0.2, 0.1]), 256)


def test_names_match_after_deleting_table_prefixes():
    assert bare_name("l_orderkey") == bare_name("o_orderkey") == "orderkey"
    assert names_match(["l_partkey", "l_suppkey"], ["ps_partkey", "ps_suppkey"])
    assert not names_match(["l_partkey"], ["s_suppkey"])
    assert bare_name("id") == "id"
