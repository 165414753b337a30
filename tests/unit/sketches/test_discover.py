"""Pair pruning before BML estimation: each rule removes exactly the pairs it should, and counts them."""

import numpy as np

from lakemeta.sketches.discover import PairCounts, candidate_pairs, compatible, type_family
from lakemeta.sketches.hll import counter_delta, registers
from lakemeta.sketches.state import ColumnRegisters

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
    # table c: a string of 2000 values
    sizes = [20_000, 30, 2000, 2000, 0, 2000]
    tables = ["a", "a", "b", "b", "b", "c"]
    families = ["numeric", "numeric", "numeric", "date", "string", "string"]
    regs = np.stack([_registers(n, i) if n else np.zeros(1 << P, np.uint8) for i, n in enumerate(sizes)])
    column_registers = ColumnRegisters(tables, [f"c{i}" for i in range(6)], regs)
    counts = PairCounts()
    x, y = candidate_pairs(column_registers, families, 0.5, P, counts)
    got = set(zip(x.tolist(), y.tolist(), strict=True))

    cross = [(i, j) for i in range(6) for j in range(6) if tables[i] != tables[j]]
    typed = [(i, j) for i, j in cross if compatible(families[i], families[j])]
    non_empty = [(i, j) for i, j in typed if sizes[i] and sizes[j]]
    # |Y| / |X| = 2000 / 20000 and 30 / 2000 cannot reach 0.5 even with 4 standard errors of slack
    expected = {(i, j) for i, j in non_empty if sizes[j] / sizes[i] >= 0.5}
    assert got == expected
    assert (0, 2) not in got and (2, 1) not in got and (2, 0) in got and (1, 5) in got
    assert counts.considered == len(cross)
    assert counts.pruned_types == len(cross) - len(typed)
    assert counts.pruned_empty == len(typed) - len(non_empty)
    assert counts.pruned_cardinality == len(non_empty) - len(expected)
