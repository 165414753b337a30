"""FD and UCC counts of the fd/ datasets (../shared/data/README.md), computed from the CSV files."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pytest

from lakemeta.agreesets import DynASt, minimal_fds, minimal_uccs

DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"

EXPECTED = {  # file: (minimal FDs, minimal UCCs)
    "iris": (4, 0),
    "balance-scale": (1, 1),
    "chess": (1, 1),
    "abalone": (137, 29),
    "nursery": (1, 1),
    "breast-cancer-wisconsin": (46, 0),
    "bridges": (142, 5),
}


def read_strings(path: Path) -> pa.Table:
    """Header-less CSV, every value a string; '?' and '' are ordinary values."""
    header = pcsv.read_csv(path, read_options=pcsv.ReadOptions(autogenerate_column_names=True))
    return pcsv.read_csv(
        path,
        read_options=pcsv.ReadOptions(autogenerate_column_names=True),
        convert_options=pcsv.ConvertOptions(
            column_types=dict.fromkeys(header.column_names, pa.string()),
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
    )


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fd_and_ucc_counts(name: str) -> None:
    if not DATA.is_dir():
        pytest.skip("fd/ datasets: ../shared/data absent")
    table = read_strings(DATA / "fd" / f"{name}.csv")
    state = DynASt(table.column_names)
    state.apply_batch(inserted=table)
    assert state.n_rows == table.num_rows
    fds = minimal_fds(state.multiset, state.n_rows)
    uccs = minimal_uccs(state.multiset, state.n_rows)
    assert (len(fds), len(uccs)) == EXPECTED[name]
