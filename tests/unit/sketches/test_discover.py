"""Pair pruning before BML estimation: each rule removes exactly the pairs it should, and the pairs found
through the register index carry the same z as comparing the two rows."""

import numpy as np
import pyarrow as pa
import pytest

from lakemeta.config import SketchConfig
from lakemeta.sketches.bml import EXACT_MARGINAL, estimate_inclusion
from lakemeta.sketches.discover import column_facts, compatible, type_family
from lakemeta.sketches.dominance import RegisterIndex
from lakemeta.sketches.hll import counter_delta, estimate_cardinality, registers
from lakemeta.sketches.pair_tiles import (
    ESTIMATED,
    EXACT,
    PENDING,
    PairBudgetError,
    ValueSets,
    assign_blocks,
    estimate_tile,
    tile_index,
)

P = 10


def _registers(n_distinct: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return registers(counter_delta(rng.integers(0, 2**64, n_distinct, dtype=np.uint64), p=P))


def test_type_families_and_compatibility() -> None:
    assert [type_family(t) for t in ("bigint", "int", "decimal(15,2)", "double")] == ["numeric"] * 4
    assert type_family("string") == "string" and type_family("date") == "date"
    assert type_family("timestamp_ntz") == "timestamp" and type_family("array<int>") is None
    assert compatible("numeric", "numeric") and compatible("string", "date") and compatible("date", "string")
    assert not compatible("numeric", "date") and not compatible("boolean", "numeric")


def test_each_rule_prunes_exactly_its_pairs() -> None:
    # table a: big numeric, small numeric; table b: numeric of 2000, a date, an empty string column;
    # table c: a string of 2000 values; the numeric columns share their values (seed 0 prefixes), so
    # every pair the other rules allow has a dominated register
    sizes = [20_000, 30, 2000, 2000, 0, 2000]
    tables = ["a", "a", "b", "b", "b", "c"]
    families = ["numeric", "numeric", "numeric", "date", "string", "string"]
    pool = np.random.default_rng(0).integers(0, 2**64, 20_000, dtype=np.uint64)
    regs = np.stack([registers(counter_delta(pool[:n], p=P)) for n in sizes])
    facts = column_facts(np.array(tables, object), families, estimate_cardinality(regs), np.zeros(6, int))
    index = tile_index(np.arange(6), regs, None, facts, SketchConfig(precision=P))
    pairs = index.pairs(0, len(sizes), index.counts())
    got = set(zip(pairs.x.tolist(), pairs.y.tolist(), strict=True))

    cross = [(i, j) for i in range(6) for j in range(6) if tables[i] != tables[j]]
    typed = [(i, j) for i, j in cross if compatible(families[i], families[j])]
    non_empty = [(i, j) for i, j in typed if sizes[i] and sizes[j]]
    # |Y| / |X| = 2000 / 20000 and 30 / 2000 cannot reach 0.5 even with 4 standard errors of slack
    expected = {(i, j) for i, j in non_empty if sizes[j] / sizes[i] >= 0.5}
    assert got == expected
    assert (0, 2) not in got and (2, 1) not in got and (2, 0) in got and (1, 5) in got
    assert facts.cross_table_pairs() == len(cross)
    assert np.array_equal(pairs.z, (regs[pairs.x] <= regs[pairs.y]).sum(axis=1))


def test_the_register_index_finds_every_pair_with_a_dominated_register_and_no_other() -> None:
    # columns of 1 to 5,000 values drawn from a few shared pools, so that pairs overlap in every degree;
    # the large ones fill more than an eighth of the 2^10 registers and are compared row against row
    rng = np.random.default_rng(4)
    pools = [rng.integers(0, 2**64, 6000, dtype=np.uint64) for _ in range(3)]
    sizes = np.rint(10 ** rng.uniform(0, 3.7, 80)).astype(int)
    regs = np.stack(
        [
            registers(counter_delta(rng.choice(pools[i % 3], n, replace=False), p=P))
            for i, n in enumerate(sizes)
        ]
    )
    n = len(sizes)
    table_of = np.arange(n) // 2
    everything = np.ones((1, 1), bool)
    index = RegisterIndex(regs, table_of, np.zeros(n, int), everything, np.ones(n), np.zeros(n), 0.5)
    blocks = list(index.blocks(max_pairs=500))  # a few columns' pairs at a time
    assert len(blocks) > 2
    found_x, found_y, found_z = (np.concatenate([getattr(b, a) for b in blocks]) for a in "xyz")
    x, y = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(n), indexing="ij"))
    cross = table_of[x] != table_of[y]
    x, y = x[cross], y[cross]
    z = (regs[x] <= regs[y]).sum(axis=1)
    filled = (regs > 0).sum(axis=1)
    dense = 8 * filled[x] > regs.shape[1]
    shared = z > (regs.shape[1] - filled[x])
    kept = (filled[x] > 0) & (dense | shared)
    expected = dict(zip(zip(x[kept].tolist(), y[kept].tolist(), strict=True), z[kept].tolist(), strict=True))
    got = dict(zip(zip(found_x.tolist(), found_y.tolist(), strict=True), found_z.tolist(), strict=True))
    assert len(got) == len(found_x)  # each pair once
    assert got == expected and any(dense) and not all(shared)
    # what is left out would have been estimated as Φ̂ = 0
    left_out = ~dense & ~shared
    estimates = estimate_inclusion(regs, x[left_out], y[left_out], model=EXACT_MARGINAL)
    assert np.all(estimates.estimate == 0.0)


def test_tiles_of_any_size_give_every_pair_once_and_the_same_estimates() -> None:
    # 60 columns of 1 to 40,000 values from two shared pools in 20 tables; the value sets of the columns of
    # at most 500 values held by the tiles, so that the counted (in the tile, and pending for a join) and
    # the jointly estimated paths are all taken
    rng = np.random.default_rng(7)
    pools = [rng.integers(0, 2**64, 40_000, dtype=np.uint64) for _ in range(2)]
    sizes = np.rint(10 ** rng.uniform(0, 4.6, 60)).astype(int)
    regs = np.stack([registers(counter_delta(pools[i % 2][: sizes[i]], p=P)) for i in range(60)])
    facts = column_facts(
        np.array([f"t{i % 20}" for i in range(60)], object),
        ["numeric"] * 60,
        estimate_cardinality(regs),
        sizes,
    )
    config = SketchConfig(precision=P, exact_max_distinct=500)
    held = pa.array(
        [np.sort(pools[i % 2][: sizes[i]].view(np.int64)) if sizes[i] <= 500 else None for i in range(60)],
        pa.list_(pa.int64()),
    )

    def sets(columns: np.ndarray) -> ValueSets:
        return ValueSets.of_lists(held.take(pa.array(columns)))

    def by_pair(tiles: list) -> dict:
        rows = {}
        for tile in tiles:
            for row in zip(tile.dep, tile.ref, tile.estimate, tile.error_bound, tile.status, strict=True):
                assert row[:2] not in rows  # each pair in one tile only
                rows[row[:2]] = row[2:]
        return rows

    everything = np.arange(60)
    whole = estimate_tile(everything, regs, sets(everything), None, None, None, facts, config)
    # under a bound on the pairs it may keep (the driver's) the tile stops once it passes it
    with pytest.raises(PairBudgetError):
        estimate_tile(everything, regs, sets(everything), None, None, None, facts, config, max_pairs=3)
    filled = (regs > 0).sum(axis=1)
    block = assign_blocks(filled, P, tile_bytes=8 * (1 << P))
    n_blocks = block.max() + 1
    assert n_blocks >= 5 and np.all(np.diff(block) >= 0)
    members = [np.flatnonzero(block == b) for b in range(n_blocks)]
    tiles = [
        estimate_tile(
            a,
            regs[a],
            sets(a),
            None if i == j else b,
            None if i == j else regs[b],
            None if i == j else sets(b),
            facts,
            config,
        )
        for i, a in enumerate(members)
        for j, b in enumerate(members)
    ]
    assert sum(t.examined for t in tiles) == whole.examined > 0
    expected, got = by_pair([whole]), by_pair(tiles)
    assert got == expected
    assert {EXACT, ESTIMATED, PENDING} <= {status for *_, status in expected.values()}
    # counted in the tile: two small columns of one pool share the smaller's values, of two pools none
    for (x, y), (estimate, bound, status) in expected.items():
        if status == EXACT:
            shared = min(sizes[x], sizes[y]) if x % 2 == y % 2 else 0
            assert estimate == shared / sizes[x] and bound == 0.0
        if status == PENDING:
            assert min(sizes[x], sizes[y]) <= 500 < max(sizes[x], sizes[y])
