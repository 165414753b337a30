"""What the newest publication points at (the catalog table ``published``): the version of each catalog
table the views and ``lakemeta show`` read, read with delta-rs (no JVM)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.catalog.store import read_small
from lakemeta.storage import Location


def newest_publication(root: Location) -> pa.Table:
    """The rows of ``published`` of the newest publication: a version of each catalog table, and the audit
    (none before the first publication)."""
    published = read_small(root, "published")
    if published.num_rows == 0:
        return published
    return published.filter(pc.equal(published["published_at"], pc.max(published["published_at"])))


def published_versions(root: Location) -> dict[str, int]:
    """The version of each catalog table that the newest publication points the views and ``lakemeta show``
    at (none before the first publication)."""
    newest = newest_publication(root).select(["table_name", "version"])
    return {row["table_name"]: row["version"] for row in newest.to_pylist()}
