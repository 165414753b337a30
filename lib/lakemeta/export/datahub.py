"""The catalog in DataHub: each lake table a dataset with its schema, primary key, accepted foreign keys and
column profile, as metadata change proposals made with DataHub's own SDK (``acryl-datahub``, the extra
``datahub``), written to a file its ingestion reads (``datahub ingest`` with a file source, or
``datahub check metadata-file``) or sent to a DataHub server's REST endpoint.

Read from the published catalog (``lakemeta.show``: the versions the quality gate passed; the latest
before a first publication), with delta-rs: no JVM. The primary key of a table is the key its accepted FKs
reference (one key per table, as the FK step chooses them); a table no accepted FK references gets the
smallest of its unique column combinations, the first columns first. DataHub shows PK/FK constraints in a
dataset's schema and its profile in the Stats tab; an FK's referenced dataset is a link there.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.catalog.publication import published_versions
from lakemeta.storage import Location

if TYPE_CHECKING:  # DataHub's SDK is the extra `datahub`: imported where an export runs
    from datahub.emitter.mcp import MetadataChangeProposalWrapper
    from datahub.metadata.schema_classes import SchemaFieldDataTypeClass

log = logging.getLogger(__name__)

PLATFORM = "delta-lake"
# Spark SQL type names (``columns.data_type``) to DataHub's type classes; others are strings to DataHub.
_NUMBERS = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal", "long", "integer")


def _field_type(data_type: str) -> SchemaFieldDataTypeClass:
    from datahub.metadata import schema_classes as classes

    name = data_type.lower()
    if name.startswith(_NUMBERS):
        kind = classes.NumberTypeClass()
    elif name == "boolean":
        kind = classes.BooleanTypeClass()
    elif name.startswith(("date", "timestamp")):
        kind = classes.DateTypeClass() if name == "date" else classes.TimeTypeClass()
    elif name == "binary":
        kind = classes.BytesTypeClass()
    elif name.startswith(("array", "map", "struct")):
        kind = classes.ArrayTypeClass() if name.startswith("array") else classes.RecordTypeClass()
    else:
        kind = classes.StringTypeClass()
    return classes.SchemaFieldDataTypeClass(type=kind)


def _fk_name(table: str, fk: dict) -> str:
    """``orders(o_custkey) -> customer(c_custkey)``: the constraint's name in DataHub."""
    return f"{table}({','.join(fk['fk_columns'])}) -> {fk['pk_table']}({','.join(fk['pk_columns'])})"


def primary_keys(keys: pa.Table, accepted: pa.Table) -> dict[str, list[str]]:
    """Each table's primary key (module docstring): the key its accepted FKs reference, else its smallest
    unique column combination (ties: the one whose columns sort first)."""
    chosen: dict[str, list[str]] = {}
    for row in accepted.select(["pk_table", "pk_columns"]).to_pylist():
        chosen.setdefault(row["pk_table"], row["pk_columns"])
    for row in sorted(keys.to_pylist(), key=lambda r: (len(r["columns"]), r["columns"])):
        chosen.setdefault(row["table_name"], row["columns"])
    return chosen


def proposals(
    catalog: Location | Path | str, lake_name: str, env: str = "PROD"
) -> Iterator[MetadataChangeProposalWrapper]:
    """The metadata change proposals of every lake table the catalog knows (``MetadataChangeProposalWrapper``
    of DataHub's SDK): dataset properties, schema with primary and foreign keys, and profile. Datasets are
    named ``<lake_name>.<table>`` on the ``delta-lake`` platform."""
    from datahub.emitter import mce_builder
    from datahub.emitter.mcp import MetadataChangeProposalWrapper
    from datahub.metadata import schema_classes as classes

    root = Location.parse(catalog)
    versions = published_versions(root) if (root / "published").is_delta_table() else {}

    def read(name: str, where: pc.Expression | None = None, columns: list[str] | None = None) -> pa.Table:
        """A catalog table at its published version (its newest before a first publication)."""
        table = (root / name).delta_table()
        if name in versions:
            table.load_as_version(versions[name])
        return (root / name).delta_dataset(table).to_table(columns=columns, filter=where)

    tables, columns = read("tables"), read("columns")
    # the accepted alone, filtered in the scan: a dense lake's candidates run into the millions
    accepted = read(
        "fk_candidates", pc.field("accepted"), ["fk_table", "fk_columns", "pk_table", "pk_columns"]
    )
    keys = primary_keys(read("unique_column_combinations"), accepted)

    def urn(table: str) -> str:
        return mce_builder.make_dataset_urn(PLATFORM, f"{lake_name}.{table}", env)

    by_table: dict[str, list[dict]] = {}
    for column in sorted(columns.to_pylist(), key=lambda c: (c["table_name"], c["ordinal"])):
        by_table.setdefault(column["table_name"], []).append(column)
    references: dict[str, list[dict]] = {}
    for fk in accepted.to_pylist():
        references.setdefault(fk["fk_table"], []).append(fk)
    now = int(time.time() * 1000)
    for table in tables.to_pylist():
        name, dataset = table["table_name"], urn(table["table_name"])
        fields = by_table.get(name, [])
        yield MetadataChangeProposalWrapper(
            entityUrn=dataset,
            aspect=classes.DatasetPropertiesClass(
                name=name,
                qualifiedName=f"{lake_name}.{name}",
                customProperties={"rows": str(table["n_rows"]), "delta_version": str(table["last_version"])},
            ),
        )
        foreign_keys = [
            classes.ForeignKeyConstraintClass(
                name=_fk_name(name, fk),
                sourceFields=[mce_builder.make_schema_field_urn(dataset, c) for c in fk["fk_columns"]],
                foreignFields=[
                    mce_builder.make_schema_field_urn(urn(fk["pk_table"]), c) for c in fk["pk_columns"]
                ],
                foreignDataset=urn(fk["pk_table"]),
            )
            for fk in sorted(references.get(name, []), key=lambda fk: (fk["fk_columns"], fk["pk_table"]))
        ]
        yield MetadataChangeProposalWrapper(
            entityUrn=dataset,
            aspect=classes.SchemaMetadataClass(
                schemaName=name,
                platform=mce_builder.make_data_platform_urn(PLATFORM),
                version=0,
                hash="",
                platformSchema=classes.OtherSchemaClass(rawSchema=""),
                fields=[
                    classes.SchemaFieldClass(
                        fieldPath=c["column_name"],
                        type=_field_type(c["data_type"]),
                        nativeDataType=c["data_type"],
                        nullable=bool(c["n_nulls"]),
                        isPartOfKey=c["column_name"] in keys.get(name, []),
                    )
                    for c in fields
                ],
                primaryKeys=keys.get(name),
                foreignKeys=foreign_keys or None,
            ),
        )
        yield MetadataChangeProposalWrapper(
            entityUrn=dataset,
            aspect=classes.DatasetProfileClass(
                timestampMillis=now,
                rowCount=table["n_rows"],
                columnCount=table["n_columns"],
                fieldProfiles=[
                    classes.DatasetFieldProfileClass(
                        fieldPath=c["column_name"],
                        uniqueCount=c["n_distinct"]
                        if c["n_distinct"] is not None
                        else c["n_distinct_estimate"],
                        nullCount=c["n_nulls"],
                        nullProportion=c["n_nulls"] / c["n_rows"] if c["n_rows"] else None,
                    )
                    for c in fields
                ],
            ),
        )


def export(
    catalog: Location | Path | str,
    lake_name: str,
    out: Path | None = None,
    server: str | None = None,
    token: str | None = None,
) -> int:
    """Write the catalog's proposals (:func:`proposals`) to the file ``out`` (DataHub's metadata file
    format), or send them to the DataHub server at ``server`` (its GMS URL) with ``token``; returns how many
    were made."""
    made = list(proposals(catalog, lake_name))
    if server is not None:
        from datahub.emitter.rest_emitter import DatahubRestEmitter

        emitter = DatahubRestEmitter(server, token=token)
        emitter.test_connection()
        for proposal in made:
            emitter.emit(proposal)
        log.info("sent %d metadata change proposals to %s", len(made), server)
    else:
        from datahub.ingestion.sink.file import write_metadata_file

        if out is None:
            raise ValueError("give the file to write (out) or a DataHub server (server)")
        write_metadata_file(out, made)
        log.info("wrote %d metadata change proposals to %s", len(made), out)
    return len(made)
