"""A catalog table too large for one frame, validated in parts: the pair tables of a dense lake hold tens
of millions of rows, and Great Expectations validates a pandas frame whole (the gate that loaded them
whole peaked at 20.8 GB; docs/performance.md).

The rows are split into parts of about ``PART_ROWS`` by a hash of their key (``PartSuite.key``), so all
rows of a key fall in one part: a suite's uniqueness expectation over a part is then its expectation over
the table, and every expectation of the suite runs in Great Expectations, on each part. The parts are
spilled to local Arrow files in one pass over the table, read back one at a time (strings as
categories: a pair table's names are a few thousand tables and columns), and the parts' results are merged
into one result per suite (``merged_result``), the counts summed as if Great Expectations had seen the
table whole.
"""

from __future__ import annotations

import json
import math
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from lakemeta.quality.results import as_frame

PART_ROWS = 1_000_000  # the rows of one validated frame: what GX adds to it is several times its size
_READ_ROWS = 500_000  # the rows of one batch read from the table while splitting it
# An Arrow IPC stream per part, LZ4-compressed: a stream (not a file) takes each batch with its own
# dictionaries, and writes and reads back several times faster than Parquet.
_SPILLED = pa.ipc.IpcWriteOptions(compression="lz4")
_SHOWN = 20  # the unexpected values a merged result lists, as GX's default result format does


def table_parts(
    dataset: ds.Dataset, key: list[str] | None, columns: list[str] | None, part_rows: int = PART_ROWS
) -> Iterator[pd.DataFrame]:
    """The rows of ``dataset`` (its ``columns``, all when None) as frames of about ``part_rows`` rows, every
    row of a ``key`` in one frame (a part's keys hash alike, so a part may hold a few more rows); one
    frame, empty, for an empty table."""
    parts = math.ceil(dataset.count_rows() / part_rows)
    if parts <= 1 or not key:  # nothing to keep apart: the rows in the order they are read
        yield from _gathered(dataset, columns, part_rows)
        return
    with tempfile.TemporaryDirectory(prefix="lakemeta-audit-") as folder:
        for file in _spilled(dataset, key, columns, parts, Path(folder)):
            with pa.ipc.open_stream(file) as part:
                yield as_frame(part.read_all(), True)
            file.unlink()


def _gathered(dataset: ds.Dataset, columns: list[str] | None, part_rows: int) -> Iterator[pd.DataFrame]:
    pending: list[pa.RecordBatch] = []
    rows, any_yielded = 0, False
    for batch in _batches(dataset, columns):
        pending.append(batch)
        rows += batch.num_rows
        if rows >= part_rows:
            yield as_frame(pa.Table.from_batches(pending), True)
            pending, rows, any_yielded = [], 0, True
    if pending or not any_yielded:
        schema = dataset.schema if columns is None else pa.schema([dataset.schema.field(c) for c in columns])
        yield as_frame(pa.Table.from_batches(pending, schema=None if pending else schema), True)


def _batches(dataset: ds.Dataset, columns: list[str] | None) -> Iterator[pa.RecordBatch]:
    """The rows of the dataset's files in batches, holding little of the table at a time: its strings
    read as dictionaries (a pair table's names repeat) and its row groups not pre-buffered. A file that
    Spark wrote is one row group of millions of rows: pre-buffered and decoded as strings, reading the
    2,000 dense tables' inclusion estimates took 460 MB more at a time, against about 200 MB so."""
    fragments = list(dataset.get_fragments())
    in_files = set(fragments[0].physical_schema.names) if fragments else set()
    strings = [f.name for f in dataset.schema if pa.types.is_string(f.type) and f.name in in_files]
    parquet = ds.ParquetFileFormat(
        read_options=ds.ParquetReadOptions(dictionary_columns=strings),
        default_fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=False),
    )
    schema = pa.schema(
        [
            f.with_type(pa.dictionary(pa.int32(), pa.string())) if f.name in strings else f
            for f in dataset.schema
        ]
    )
    streamed = ds.FileSystemDataset(
        [parquet.make_fragment(f.path, f.filesystem, f.partition_expression) for f in fragments],
        schema,
        parquet,
        dataset.filesystem,
    )
    yield from streamed.to_batches(
        columns=columns, batch_size=_READ_ROWS, batch_readahead=1, fragment_readahead=1
    )


def _spilled(
    dataset: ds.Dataset, key: list[str], columns: list[str] | None, parts: int, folder: Path
) -> list[Path]:
    """Split the table by key hash into ``parts`` Arrow stream files in ``folder`` in one pass."""
    files = [folder / f"part-{number}.arrows" for number in range(parts)]
    writers: list[pa.ipc.RecordBatchStreamWriter | None] = [None] * parts
    try:
        for batch in _batches(dataset, columns):
            part = (_key_hashes(batch, key) % np.uint64(parts)).astype(np.int64)
            sizes = np.bincount(part, minlength=parts)
            starts = np.cumsum(sizes) - sizes
            rows = batch.take(pa.array(np.argsort(part, kind="stable")))
            for number in np.flatnonzero(sizes):
                if writers[number] is None:
                    writers[number] = pa.ipc.new_stream(files[number], batch.schema, options=_SPILLED)
                writers[number].write_batch(rows.slice(starts[number], sizes[number]))
    finally:
        for writer in writers:
            if writer is not None:
                writer.close()
    return [file for file, writer in zip(files, writers, strict=True) if writer is not None]


def _key_hashes(batch: pa.RecordBatch, key: list[str]) -> np.ndarray:
    """A 64-bit hash of each row's key, the same for equal keys in any batch:
    each value's CRC-32, combined column by column. The CRCs are computed per distinct value of the batch
    (the names of a few thousand tables and columns), never per row."""
    hashes = np.zeros(batch.num_rows, dtype=np.uint64)
    for name in key:
        encoded = batch.column(name)
        if not pa.types.is_dictionary(encoded.type):
            encoded = pc.dictionary_encode(encoded)
        values = encoded.dictionary.to_pylist()
        # one more code for null, the index a null row gets
        crcs = np.array([zlib.crc32(str(value).encode()) for value in values] + [0], dtype=np.uint64)
        indices = pc.fill_null(encoded.indices, len(values)).to_numpy()
        hashes = hashes * np.uint64(1_000_003) + crcs[indices]
    return hashes


_COUNTS = ("element_count", "unexpected_count", "missing_count")


def merged_result(parts: list[dict]) -> dict:
    """One suite's validation results over the parts of a table (each as the gate records it) as one
    result over the whole table: an expectation succeeds when it succeeds on every part, its counts are
    summed and its percentages computed from the sums as GX computes them, and its unexpected values are
    the first ``_SHOWN`` of the parts'."""
    first = parts[0]
    results = []
    for outcomes in zip(*(part["results"] for part in parts), strict=True):
        merged = dict(outcomes[0])
        merged["success"] = all(outcome["success"] for outcome in outcomes)
        failed = [outcome for outcome in outcomes if not outcome["success"]]
        merged["result"] = _merged_counts([outcome["result"] for outcome in outcomes], failed)
        merged["exception_info"] = next(
            (o["exception_info"] for o in outcomes if o["exception_info"].get("raised_exception")),
            outcomes[0]["exception_info"],
        )
        results.append(merged)
    successful = sum(outcome["success"] for outcome in results)
    return {
        **first,
        "success": all(part["success"] for part in parts),
        "results": results,
        "statistics": {
            "evaluated_expectations": len(results),
            "successful_expectations": successful,
            "unsuccessful_expectations": len(results) - successful,
            "success_percent": 100.0 * successful / len(results) if results else None,
        },
        "meta": {**first["meta"], "parts": len(parts)},
    }


def _merged_counts(results: list[dict], failed: list[dict]) -> dict:
    # What is not a count comes from the first part that failed (or the first part): an observed value
    # of a part is the table's only for the expectations the pair suites do not use.
    merged = dict(failed[0]["result"] if failed else results[0])
    merged.update({name: sum(result[name] for result in results) for name in _COUNTS if name in merged})
    if "element_count" not in merged or "unexpected_count" not in merged:
        return merged
    elements, unexpected = merged["element_count"], merged["unexpected_count"]
    if "missing_count" in merged:  # an expectation that leaves missing values out of its denominator
        present = elements - merged["missing_count"]
        merged.update(
            missing_percent=_percent(merged["missing_count"], elements),
            unexpected_percent=_percent(unexpected, present),
            unexpected_percent_total=_percent(unexpected, elements),
            unexpected_percent_nonmissing=_percent(unexpected, present),
        )
    else:
        merged["unexpected_percent"] = _percent(unexpected, elements)
    merged.update(
        partial_unexpected_list=[v for r in results for v in r.get("partial_unexpected_list", [])][:_SHOWN],
        partial_unexpected_counts=_merged_value_counts(results),
    )
    # a row's index within its part says nothing about the table
    merged.pop("partial_unexpected_index_list", None)
    return merged


def _percent(count: int, of: int) -> float | None:
    return 100.0 * count / of if of else None


def _merged_value_counts(results: list[dict]) -> list[dict]:
    counts: dict[str, dict] = {}
    for result in results:
        for entry in result.get("partial_unexpected_counts", []):
            same = counts.setdefault(json.dumps(entry["value"], default=str), {**entry, "count": 0})
            same["count"] += entry["count"]
    return sorted(counts.values(), key=lambda entry: -entry["count"])[:_SHOWN]
