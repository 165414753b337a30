"""`lakemeta ingest`: CSV and Parquet files or folders become Delta tables in the lake.

Every table is written with the change data feed and row tracking on, in a single Delta commit, so a
failed ingest leaves no half-written table. An append is idempotent: a retried ingest of the same file
appends its rows once (see :func:`append_id`). CSV rows Spark cannot parse (a wrong number of fields, an
unparsable value) go to a quarantine table ``_quarantine/<table>`` beside the lake's tables, with the
source file, the numbers of the lines holding the record, the raw record and the reason, and the ingest
reports how many went there and their first lines.

Naming: a file given on the command line becomes the table named by its stem (``orders.parquet`` ->
``orders``); a folder ``F`` contributes one table per data file inside it, named ``F/<relative path
without extension>``. ``prefix`` puts all of them under a sub-folder of the lake.
Column names keep their text except the characters Delta refuses in names without column mapping
(`` ,;{}()\\n\\t=``), which become ``_``.
"""

from __future__ import annotations

import hashlib
import logging
import re
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyspark.sql.functions as F
from pyspark.sql import Column, DataFrame, DataFrameReader, SparkSession, Window
from pyspark.sql.types import StringType, StructField, StructType
from tqdm import tqdm

from lakemeta.config import IngestConfig
from lakemeta.crash_points import crash_point
from lakemeta.lake.tables import source_column, table_path
from lakemeta.spark.portable import describe_jobs
from lakemeta.storage import Location

log = logging.getLogger(__name__)

CSV_SUFFIXES = {".csv", ".tsv", ".txt"}
PARQUET_SUFFIXES = {".parquet", ".pq"}
TABLE_PROPERTIES = {"delta.enableChangeDataFeed": "true", "delta.enableRowTracking": "true"}
QUARANTINE = "_quarantine"
_CORRUPT = "_corrupt_record"
_INVALID_NAME_CHARS = re.compile(r"[ ,;{}()\n\t=]")


class IngestError(ValueError):
    """A source that cannot become a table; the message names the file."""


@dataclass(frozen=True)
class SourceFile:
    table_name: str
    path: Path
    file_format: str  # "csv" | "parquet"


@dataclass(frozen=True)
class IngestResult:
    table_name: str
    source: Path
    rows: int
    quarantined: int
    already_appended: bool = False  # an append of this file's content was found in the table: none made


def find_sources(sources: list[Path], prefix: str = "") -> list[SourceFile]:
    """Expand files and folders into the tables they become (see the module's naming rules)."""
    found: list[SourceFile] = []
    for source in sources:
        if not source.exists():
            raise IngestError(f"{source}: no such file or folder")
        if source.is_file():
            found.append(_source_file(source, source.stem, prefix))
            continue
        for path in sorted(p for p in source.rglob("*") if p.is_file()):
            if path.suffix.lower() in CSV_SUFFIXES | PARQUET_SUFFIXES:
                relative = path.relative_to(source).with_suffix("")
                found.append(_source_file(path, f"{source.name}/{relative.as_posix()}", prefix))
    names = [s.table_name for s in found]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise IngestError(f"several sources would become the same table: {', '.join(duplicates)}")
    return found


def _source_file(path: Path, name: str, prefix: str) -> SourceFile:
    suffix = path.suffix.lower()
    if suffix in CSV_SUFFIXES:
        file_format = "csv"
    elif suffix in PARQUET_SUFFIXES:
        file_format = "parquet"
    else:
        raise IngestError(f"{path}: not a CSV or Parquet file (suffix {suffix or 'missing'})")
    table_name = f"{prefix.strip('/')}/{name}" if prefix else name
    return SourceFile(table_name=table_name, path=path, file_format=file_format)


def ingest(
    spark: SparkSession,
    lake: Location | Path,
    sources: list[SourceFile],
    options: IngestConfig,
    mode: str = "error",
    parallel: int = 4,
) -> list[IngestResult]:
    """Write each source as a Delta table, ``parallel`` at a time (small tables are dominated by the
    driver's per-commit work, which overlaps well). ``mode`` is ``error`` (the table must not exist),
    ``overwrite`` (a new version replacing the rows, visible to the change feed) or ``append``."""
    if mode not in {"error", "overwrite", "append"}:
        raise ValueError(f"unknown ingest mode {mode!r}")
    lake = Location.parse(lake)
    results: list[IngestResult] = []
    with (
        ThreadPoolExecutor(max_workers=parallel) as pool,
        tqdm(total=len(sources), desc="ingest", unit="table", disable=None) as progress,
    ):
        futures = [pool.submit(ingest_one, spark, lake, source, options, mode) for source in sources]
        for future in as_completed(futures):
            results.append(future.result())
            progress.update()
    results.sort(key=lambda r: r.table_name)
    log.info(
        "ingested %d tables: %d rows, %d malformed records quarantined",
        len(results),
        sum(r.rows for r in results),
        sum(r.quarantined for r in results),
    )
    return results


def ingest_one(
    spark: SparkSession, lake: Location, source: SourceFile, options: IngestConfig, mode: str
) -> IngestResult:
    destination = table_path(lake, source.table_name)
    describe_jobs(spark, f"ingest {source.path.name} -> {source.table_name}")
    exists = destination.is_delta_table()
    if exists and mode == "error":
        raise IngestError(f"{source.path}: could not write table {source.table_name}: it exists (mode error)")
    transaction = append_id(source.path) if mode == "append" else None
    if (
        transaction is not None
        and exists
        and destination.delta_table().transaction_version(transaction) is not None
    ):
        log.info("%s: already appended to %s; nothing written", source.path, source.table_name)
        return IngestResult(source.table_name, source.path, 0, 0, already_appended=True)
    if source.file_format == "parquet":
        frame, bad, parsed = spark.read.parquet(str(source.path)), None, None
    else:
        frame, bad, parsed = _read_csv(spark, source.path, options)
    frame = _with_valid_names(frame)
    # The rows set aside are written first, tagged with the table version they come before: a crash
    # between the two commits leaves them recorded, and the retry skips them and writes the table.
    next_version = destination.delta_table().version() + 1 if exists else 0
    quarantined = _quarantine(spark, lake, source, bad, next_version) if bad is not None else 0
    crash_point(f"after quarantine of {source.table_name}")
    writer = frame.write.format("delta").mode(mode)
    for key, value in TABLE_PROPERTIES.items():
        writer = writer.option(key, value)
    if transaction is not None:
        # Delta records the id in the commit and skips a write whose id it holds: two retries racing past
        # the check above still append once.
        writer = writer.option("txnAppId", transaction).option("txnVersion", 0)
    try:
        writer.save(str(destination))
    except Exception as error:
        raise IngestError(f"{source.path}: could not write table {source.table_name}: {error}") from error
    if parsed is not None:
        # Spark matches cached data by plan, not by file content: a later ingest of a rewritten file
        # must not see this one's rows.
        parsed.unpersist()
    rows = written_rows(destination)
    log.debug("ingested %s -> %s: %d rows, %d quarantined", source.path, source.table_name, rows, quarantined)
    return IngestResult(source.table_name, source.path, rows, quarantined)


def append_id(path: Path) -> str:
    """The id an append of ``path`` is recorded under in the table, with Delta's idempotent writes
    (``txnAppId``, at ``txnVersion`` 0): the file's absolute path and the SHA-256 of its content. Delta
    keeps these ids in the table's log, checkpoints included, so a retry of the same file finds its append
    however long ago it was made; the same path holding other content is another append."""
    with path.open("rb") as handle:
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    return f"lakemeta.ingest {path.resolve()} sha256:{digest}"


def written_rows(table: Location) -> int:
    """Rows the table's latest commit wrote, from the commit's own metrics (no scan, no log replay)."""
    commit = table.delta_table().history(1)[0]
    return int(commit["operationMetrics"]["numOutputRows"])


def read_csv_rows(spark: SparkSession, path: str | Location, options: IngestConfig) -> pa.Table:
    """The rows of a small CSV file typed as :func:`ingest_one` would store them (``_read_csv``), read
    whole to the driver, as a joinable search reads its query file; column names as in the file. A record
    ingest would quarantine is an error here, naming the file, the record and why."""
    good, bad, parsed = _read_csv(spark, path, options)
    try:
        malformed = bad.first()
        if malformed is not None:
            raise IngestError(f"{path}: record {malformed['raw_record']!r}: {malformed['reason']}")
        return good.toArrow()  # bounded by the caller: a query file of a joinable search, small by use
    finally:
        parsed.unpersist()


def _read_csv(
    spark: SparkSession, path: str | Path | Location, options: IngestConfig
) -> tuple[DataFrame, DataFrame, DataFrame]:
    """The good rows of a CSV file, its malformed ones (raw text and reason), and the cached parse both
    derive from (the caller unpersists it).

    Spark infers the types over the whole file first; a second read with that schema flags every
    record that does not fit it (too few or too many fields, a value of another type). Records are read
    as RFC 4180 has them: a quoted field may hold line breaks (``multiLine``, which reads each file in one
    task), which Spark's parser reads as LF whatever the file's line ending; that ending, CR, LF or CRLF,
    is detected from the first record.
    """
    reader = (
        spark.read.option("header", options.header)
        .option("sep", options.separator)
        .option("quote", options.quote)
        .option("escape", options.escape)
        .option("encoding", options.encoding)
        .option("multiLine", True)
    )
    try:
        # Without inference every column is text, as written; the header alone is read for the names.
        inferred = reader.option("inferSchema", not options.all_text).csv(str(path)).schema
        if not options.all_text:
            inferred = _text_where_lossy(reader, path, inferred)
    except Exception as error:
        raise IngestError(f"{path}: not readable as CSV: {error}") from error
    if not inferred.fields:
        raise IngestError(f"{path}: no columns found (empty file?)")
    with_corrupt = StructType([*inferred.fields, StructField(_CORRUPT, StringType(), True)])
    parsed = (
        reader.schema(with_corrupt)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", _CORRUPT)
        .csv(str(path))
        .cache()  # Spark refuses queries that touch only the corrupt-record column of an uncached read
    )
    expected = len(inferred.fields)
    malformed = parsed.where(F.col(_CORRUPT).isNotNull()).select(
        F.lit(str(path)).alias("source_file"),
        F.col(_CORRUPT).alias("raw_record"),
        F.concat(
            F.lit(f"record does not fit the file's {expected} columns ("),
            F.lit(", ".join(f"{f.name}: {f.dataType.simpleString()}" for f in inferred.fields)),
            F.lit(")"),
        ).alias("reason"),
    )
    fitting = parsed.where(F.col(_CORRUPT).isNull()).drop(_CORRUPT)
    undecodable = _undecodable_columns(inferred, options.encoding)
    good = fitting.where(undecodable == "")
    # The decoder turns bytes that are not UTF-8 into U+FFFD without a word: such records are set aside
    # rather than stored with their text changed.
    misencoded = fitting.where(undecodable != "").select(
        F.lit(str(path)).alias("source_file"),
        F.concat_ws(
            options.separator, *[source_column(f.name).cast("string") for f in inferred.fields]
        ).alias("raw_record"),
        F.concat(F.lit("bytes that are not UTF-8 (read as U+FFFD) in column "), undecodable).alias("reason"),
    )
    return good, malformed.unionByName(misencoded), parsed


def _text_where_lossy(
    reader: DataFrameReader, path: str | Path | Location, inferred: StructType
) -> StructType:
    """``inferred`` with text instead of the inferred type for every column where some value, read as that
    type and written back as text, would not be the text read ("01234" read as 1234, "+49" as 49, "1.50"
    as 1.5, "True" as true): a code keeps its leading zeros, and still equals its copies stored as text
    elsewhere in the lake. One scan of the file, read as text."""
    typed = [field for field in inferred.fields if not isinstance(field.dataType, StringType)]
    if not typed:
        return inferred
    as_text = reader.schema(StructType([StructField(f.name, StringType()) for f in inferred.fields]))
    frame = as_text.csv(str(path))
    lossy = [
        F.bool_or(
            source_column(field.name).isNotNull()
            & ~source_column(field.name)
            .try_cast(field.dataType)
            .cast("string")
            .eqNullSafe(source_column(field.name))
        ).alias(field.name)
        for field in typed
    ]
    flags = frame.agg(*lossy).first()
    text = {name for name, is_lossy in flags.asDict().items() if is_lossy}
    if text:
        kept = ", ".join(sorted(text))
        log.info("%s: columns kept as text, some values not as written in the inferred type: %s", path, kept)
    return StructType(
        [StructField(f.name, StringType(), True) if f.name in text else f for f in inferred.fields]
    )


def _undecodable_columns(schema: StructType, encoding: str) -> Column:
    """Per record, the names of its string columns holding U+FFFD, comma-separated ("" for none); always
    "" unless the file is read as UTF-8."""
    strings = [f.name for f in schema.fields if isinstance(f.dataType, StringType)]
    if encoding.replace("-", "").lower() != "utf8" or not strings:
        return F.lit("")
    flagged = [F.when(source_column(name).contains("\ufffd"), F.lit(name)) for name in strings]
    return F.concat_ws(", ", *flagged)


def valid_column_names(names: list[str]) -> list[str]:
    """Column names Delta takes without column mapping: refused characters become ``_`` (module
    docstring), and a name that then repeats an earlier one gets more ``_``."""
    renamed: list[str] = []
    for name in names:
        candidate = _INVALID_NAME_CHARS.sub("_", name) or "_"
        while candidate in renamed:
            candidate += "_"
        renamed.append(candidate)
    return renamed


def _with_valid_names(frame: DataFrame) -> DataFrame:
    renamed = valid_column_names(frame.columns)
    return frame.toDF(*renamed) if renamed != frame.columns else frame


def _quarantine(
    spark: SparkSession, lake: Location, source: SourceFile, bad: DataFrame, table_version: int
) -> int:
    """Append the set-aside records, with the numbers of the lines holding them, to
    ``_quarantine/<table>`` once for ``table_version`` of the table."""
    count = bad.count()
    if count:
        destination = table_path(lake, f"{QUARANTINE}/{source.table_name}")
        # Kept for the log below, which would otherwise read the file's lines a second time.
        located = bad.join(_line_numbers(spark, source.path, bad), "raw_record", "left").persist()
        try:
            (
                located.write.format("delta")
                .mode("append")
                .option("mergeSchema", "true")  # quarantines written before line numbers were recorded
                .option("txnAppId", f"lakemeta.ingest {source.table_name}")
                .option("txnVersion", table_version)
                .save(str(destination))
            )
            # Small by construction: the eleven lowest line numbers reach the driver, for the log.
            lines = located.select(F.explode("line_numbers").alias("line"))
            first = lines.orderBy("line").limit(11).collect()  # bounded: 11 rows, for the log
        finally:
            located.unpersist()
        shown = ", ".join(str(row.line) for row in first[:10]) + (", ..." if len(first) > 10 else "")
        log.warning(
            "%s: %d malformed records quarantined in %s (lines %s)", source.path, count, destination, shown
        )
    return count


def _line_numbers(spark: SparkSession, path: Path, records: DataFrame) -> DataFrame:
    """For each distinct ``raw_record`` of ``records``, the numbers of the file's lines holding exactly that
    text (1-based, the header line 1), as ``line_numbers``; none for a record whose text is not one line as
    read in UTF-8 (a quoted field holding a line break, another encoding, a record rebuilt from its fields).

    Computed in the JVM: Spark's text reader splits the file at every line break, each line knows the
    file split it came from (``_metadata.file_block_start``), and the lines of one split are consecutive
    in one task, so a line's number is the lines of the earlier splits plus its position in its own."""
    lines = spark.read.text(str(path)).select(
        F.col("value").alias("raw_record"),
        F.col("_metadata.file_block_start").alias("block"),
        F.monotonically_increasing_id().alias("position"),
    )
    # Two scans of the file: one counts every split's lines, one keeps the records' lines. One pass would
    # have to shuffle every line to meet the records, or cache the whole file; this runs only for a file
    # with malformed records, and a second read of its text costs a plain scan.
    blocks = lines.groupBy("block").agg(F.count(F.lit(1)).alias("lines"), F.min("position").alias("first"))
    earlier = F.sum("lines").over(Window.orderBy("block").rowsBetween(Window.unboundedPreceding, -1))
    blocks = blocks.select("block", "first", F.coalesce(earlier, F.lit(0)).alias("before"))
    numbered = lines.join(records.select("raw_record").distinct(), "raw_record", "left_semi").join(
        F.broadcast(blocks), "block"
    )
    line = (F.col("before") + F.col("position") - F.col("first") + 1).cast("int")
    return numbered.groupBy("raw_record").agg(F.sort_array(F.collect_list(line)).alias("line_numbers"))
