"""The catalog's contract: every table the catalog holds exists, with the columns and properties this
version of lakemeta keeps it with. Every step checks it when it opens the catalog (``ensure_tables``)."""

from __future__ import annotations

import contextlib
import json

import deltalake

from lakemeta.catalog.layout import BUCKET_COLUMN, LAYOUT_PROPERTIES, LOG_PROPERTIES
from lakemeta.catalog.store import Catalog

_CONTRACT_FILE = "_contract.json"  # the contract the catalog last met (``ensure_tables``)


class OutdatedLayoutError(RuntimeError):
    """A state table was written in an older layout than this version keeps it in."""


def ensure_tables(catalog: Catalog) -> None:
    """Create every table of the contract that does not exist yet (empty, with its schema), and add
    to an existing one the columns its schema has gained since it was created (null in old rows). A
    state table bucketed by table but written by an older lakemeta, without the bucket, raises
    :class:`OutdatedLayoutError`: ``lakemeta maintain`` rewrites it (a null bucket would hide rows
    from the reads and MERGEs that select by bucket).

    Every step opens the catalog, and checking each table opens its Delta log (some 20 tables, 0.15-0.25
    s a step); so a check that leaves every table as this contract wants records the contract in
    ``_contract.json``, and a later handle with the same contract reads that one file instead. A
    contract that changed (a column, a property, a layout) is checked table by table again. Catalog
    tables are only ever created here and never dropped (a rebuild truncates them), so the record
    stays true until the contract changes."""
    contract = _contract(catalog)
    record = catalog.root / _CONTRACT_FILE
    with contextlib.suppress(FileNotFoundError):
        if record.read_text() == contract:
            return
    _check_tables(catalog)
    record.write_text(contract)


def _contract(catalog: Catalog) -> str:
    """What ``ensure_tables`` makes of the catalog, as JSON: every table's schema, which tables are
    bucketed, and the tables' properties."""
    return json.dumps(
        {
            "tables": {name: schema.jsonValue() for name, schema in sorted(catalog.schemas.items())},
            "bucketed_by_table": sorted(catalog.bucketed_by_table),
            "log_properties": LOG_PROPERTIES,
            "layout_properties": LAYOUT_PROPERTIES,
        },
        sort_keys=True,
    )


def _check_tables(catalog: Catalog) -> None:
    for name in catalog.schemas:
        schema = catalog.arrow_schema(name)
        location = catalog.location(name)
        if not location.is_delta_table():
            if name in catalog.bucketed_by_table:
                location.create_delta(schema, [BUCKET_COLUMN], {**LOG_PROPERTIES, **LAYOUT_PROPERTIES})
            else:
                location.create_delta(schema, configuration=LOG_PROPERTIES)
            continue
        table = location.delta_table()
        configured = table.metadata().configuration
        if any(configured.get(key) != value for key, value in LOG_PROPERTIES.items()):
            table.alter.set_table_properties(LOG_PROPERTIES)  # a catalog created before they were set
        present = {field.name for field in table.schema().fields}
        if name in catalog.bucketed_by_table and BUCKET_COLUMN not in present:
            raise OutdatedLayoutError(
                f"{name} at {location.uri} has no {BUCKET_COLUMN}, the layout of an older lakemeta: run "
                "`lakemeta maintain` once, which rewrites it partitioned by table bucket"
            )
        missing = [field for field in schema if field.name not in present]
        if missing:
            table.alter.add_columns([deltalake.Field.from_arrow(field) for field in missing])
