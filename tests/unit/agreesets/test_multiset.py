"""The multiset state: Property 1 arithmetic, serialisation, exports."""

from __future__ import annotations

import numpy as np
import pytest

from lakemeta.agreesets import AgreeSetMultiset, masks_from_indices, names_to_mask


def multiset(sets: list[list[int]], counts: list[int], n: int = 70) -> AgreeSetMultiset:
    return AgreeSetMultiset.from_arrays(n, masks_from_indices(sets, n), np.array(counts))


def test_union_subtraction_and_dropped_entries() -> None:
    state = multiset([[0], [1, 65], [2], []], [3, 1, 2, 5])
    assert state.as_dict() == multiset([[0], [1, 65], [2]], [3, 1, 2]).as_dict()  # empty set dropped
    change = state.update(multiset([[3], [0]], [1, 1]), multiset([[2], [0]], [2, 1]))
    assert state == multiset([[0], [1, 65], [3]], [3, 1, 1])

    def mask(*attributes: int) -> np.ndarray:
        return masks_from_indices([attributes], 70)[0]

    assert [state.entry_masks()[e].tolist() for e in change.appeared] == [mask(3).tolist()]
    assert [state.entry_masks()[e].tolist() for e in change.vanished] == [mask(2).tolist()]
    assert state.count(mask(1, 65)) == 1 and state.count(mask(2)) == 0
    assert len(state) == 3 and state.total() == 5
    with pytest.raises(ValueError):
        state.add(multiset([[1, 65]], [2]), -1)


def test_arrow_round_trip_with_sorted_names() -> None:
    names = [f"col{i:02d}" for i in range(70)][::-1]
    state = multiset([[0, 69], [5]], [4, 2])
    table = state.to_arrow(names)
    assert table.column("agree_set").to_pylist() == [["col00", "col69"], ["col64"]]
    assert AgreeSetMultiset.from_arrow(table, names) == state
    assert np.array_equal(names_to_mask(["col69", "col00"], names), masks_from_indices([[0, 69]], 70)[0])


def test_many_entries_grow_the_index() -> None:
    rng = np.random.default_rng(0)
    sets = [sorted(set(rng.integers(0, 70, 4).tolist())) for _ in range(3000)]
    state = multiset(sets, [1] * len(sets))
    expected: dict[tuple[int, ...], int] = {}
    for s in sets:
        expected[tuple(s)] = expected.get(tuple(s), 0) + 1
    assert sum(state.as_dict().values()) == 3000 and len(state) == len(expected)
