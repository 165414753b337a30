"""What a derived table's content was computed from (a run, settings): recorded in the metadata of the
commit that writes the content, atomically with it, and read back from the table's log."""

from __future__ import annotations

import json

import deltalake

_REFLECTS = "lakemeta.reflects"  # commit metadata: what a derived table's content was computed from
# Delta operations that leave a table's rows as they were (a schema change does not: old rows lack values)
_CONTENT_KEPT = frozenset({"OPTIMIZE", "VACUUM START", "VACUUM END", "SET TBLPROPERTIES"})
_REFLECTS_LOOKBACK = 20  # commits; past them a discovery recomputes everything, which is always correct


def commit_metadata(reflects: dict | None) -> dict[str, str]:
    """A commit's metadata saying what the written content was computed from (:func:`recorded_reflects`)."""
    return {} if reflects is None else {_REFLECTS: json.dumps(reflects, sort_keys=True)}


def recorded_reflects(table: deltalake.DeltaTable) -> dict | None:
    """What ``table``'s content was computed from (the ``reflects`` of ``Catalog.replace_small`` and the
    other writes), as its newest commit that wrote content says; None when that commit says nothing.
    Commits that keep the content as it is (maintenance's compaction and VACUUM, a table property set) are
    passed over: otherwise every daily maintenance would make the next discovery recompute everything."""
    for commit in table.history(_REFLECTS_LOOKBACK):
        # delta-rs writes it as a key of the commit's own; Spark, into the commit's userMetadata
        recorded = commit.get(_REFLECTS) or json.loads(commit.get("userMetadata") or "{}").get(_REFLECTS)
        if recorded is not None:
            return json.loads(recorded)
        if commit.get("operation") not in _CONTENT_KEPT:
            return None
    return None
