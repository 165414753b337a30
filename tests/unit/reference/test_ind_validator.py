import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakemeta.hashing import string_buffers
from lakemeta.reference.ind_validator import validate
from lakemeta.reference.value_store import ValueStore

VOCAB = ["", "a", "b", "ab", "A", "1", "01", "1.0", "ä", "N/A", "-", "x" * 40, " a"]


def all_pairs(n):
    pairs = np.array([(d, r) for d in range(n) for r in range(n)], dtype=np.int64).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.one_of(st.none(), st.sampled_from(VOCAB)), max_size=9), min_size=1, max_size=8))
def test_validate_strings_equals_python_sets(columns):
    store = ValueStore.from_strings([pa.array(c, pa.string()) for c in columns])
    sets = [{v for v in c if v is not None} for c in columns]
    assert store.n_distinct.tolist() == [len(s) for s in sets]
    deps, refs = all_pairs(len(columns))
    got = validate(store, deps, refs)
    assert got.tolist() == [sets[d] <= sets[r] for d, r in zip(deps, refs, strict=True)]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.integers(0, 12), max_size=9), min_size=1, max_size=8))
def test_validate_keys_equals_python_sets(columns):
    store = ValueStore.from_keys([np.array(c, dtype=np.uint64) for c in columns])
    assert not store.exact_bytes
    sets = [set(c) for c in columns]
    deps, refs = all_pairs(len(columns))
    expected = [sets[d] <= sets[r] for d, r in zip(deps, refs, strict=True)]
    assert validate(store, deps, refs).tolist() == expected


def forged_store(columns_with_keys):
    """A store whose keys are chosen by the test, to force hash collisions between distinct strings."""
    keys, values, bounds = [], [], [0]
    for column in columns_with_keys:
        for key, value in sorted(column):
            keys.append(key)
            values.append(value)
        bounds.append(len(keys))
    offsets, data, _ = string_buffers(pa.array(values, pa.large_string()))
    return ValueStore(np.array(keys, np.uint64), np.array(bounds, np.int64), offsets.copy(), data.copy())


def test_hash_collisions_never_validate_a_false_ind():
    store = forged_store(
        [
            [(5, "x")],  # 0
            [(5, "y")],  # 1: same key, other value
            [(5, "y"), (5, "x"), (9, "z")],  # 2: both colliding values
            [(5, "x"), (5, "y")],  # 3: dep with two colliding values
            [(5, "y"), (9, "z")],  # 4
            [(5, "xx")],  # 5: same key, longer value
        ]
    )
    deps, refs = all_pairs(6)
    got = {(int(d), int(r)) for d, r, ok in zip(deps, refs, validate(store, deps, refs), strict=True) if ok}
    assert (0, 1) not in got and (1, 0) not in got and (0, 5) not in got and (3, 4) not in got
    assert {(0, 2), (1, 2), (3, 2), (1, 4), (0, 3), (1, 3)} <= got
    sets = [{"x"}, {"y"}, {"x", "y", "z"}, {"x", "y"}, {"y", "z"}, {"xx"}]
    assert got == {(d, r) for d in range(6) for r in range(6) if sets[d] <= sets[r]}


def test_argument_checks_and_empty_batch():
    store = ValueStore.from_strings([pa.array(["a"]), pa.array(["a", "b"])])
    assert validate(store, np.array([], np.int64), np.array([], np.int64)).shape == (0,)
    with pytest.raises(ValueError):
        validate(store, np.array([0]), np.array([2]))
    with pytest.raises(ValueError):
        validate(store, np.array([0, 1]), np.array([1]))
    empty = ValueStore.from_strings([])
    assert empty.n_columns == 0 and empty.keys.shape == (0,)
