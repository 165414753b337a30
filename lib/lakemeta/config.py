"""One configuration, read the same way by the CLI, the jobs and the DAGs.

Precedence, lowest first: the defaults below (the papers' defaults), the YAML file named by
``LAKEMETA_CONFIG``, the environment variables ``LAKEMETA_LAKE`` / ``LAKEMETA_CATALOG`` /
``LAKEMETA_SPARK_MASTER``, and finally explicit overrides (CLI flags, DAG params).
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import json
import os
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

import yaml

from lakemeta.storage import Location


@dataclasses.dataclass(frozen=True)
class IngestConfig:
    """How `lakemeta ingest` reads CSV files."""

    separator: str = ","
    header: bool = True
    quote: str = '"'
    escape: str = '"'
    encoding: str = "UTF-8"
    # Every column as text, as written, instead of the types Spark infers.
    all_text: bool = False


@dataclasses.dataclass(frozen=True)
class SketchConfig:
    """HLL state and BML inclusion estimates (BML §3-§4)."""

    # One precision for the stored counters; every m <= p of Eq. 12 is derived by folding.
    precision: int = 14
    # inclusion_estimates keeps every pair whose estimate reaches this floor (catalog contract).
    inclusion_floor: float = 0.5
    # Confidence of the error bound (Theorem 4 with Eq. 11) and the look-up tolerance ε (Alg. 2).
    confidence: float = 0.95
    tolerance: float = 1e-5
    # Pairs whose dependent has at most this many distinct values get Φ counted exactly from the value
    # sets (state/column_values) instead of estimated: |X| rows of a Spark join per pair. At 2^p values a
    # column fills about 63% of the registers, and below that the registers say little more than its size.
    exact_max_distinct: int = 16_384
    # An estimate whose error bound is wider than this is reported as undetermined (no estimate).
    max_error_bound: float = 0.25
    # Pairs are estimated in tiles of two blocks of columns (sketches.tiles), one executor task each; a
    # block holds this many bytes of register rows (2^p per column) and register index: a task about twice.
    tile_bytes: int = 128 << 20


@dataclasses.dataclass(frozen=True)
class AgreeSetConfig:
    """Agree-set state (DynASt §3-§5) and the keys and FDs derived from it (DynASt §1, §6)."""

    # Null equals null, as in the FD literature; part of the state's meaning (changing it needs a rebuild).
    null_equals_null: bool = True
    # Approximate FDs keep an error (Def. 6.2, the g1 share of violating pairs) of at most this; 0.01 is
    # the threshold of Pyro's evaluation, whose error DynASt adopts.
    max_fd_error: float = 0.01
    # Bound on the LHS size of approximate FDs (None: complete); their search is level-wise.
    max_lhs_size: int | None = None
    # Agree-sets compare every pair of tuples, so the work grows with the square of a table's rows: larger
    # tables keep no agree-set state (and get no keys, FDs or uniqueness flags).
    max_rows: int = 50_000
    # Keys and FDs are minimal hitting sets and the approximate-FD search is level-wise, both exponential in
    # the number of columns in the worst case (flight_1k, 109 columns: minutes for approximate FDs with a
    # one-column LHS, far longer with two; docs/performance.md, "Measurements behind the code"): wider
    # tables keep their agree-set state but get no keys, FDs or uniqueness flags derived.
    max_columns: int = 32


@dataclasses.dataclass(frozen=True)
class JoinSearchConfig:
    """MATE posting lists (§5) and joinable-table search (§6)."""

    # Super-key size in bits: 128 (MATE's default in §7.1), 256 or 512; changing it needs a rebuild.
    hash_bits: int = 128
    # The XASH scheme (joinsearch.xash): "authors", as the MATE authors' code computes it (the 5 least
    # frequent characters within the value, at every size), or "eq5", the paper's text with alpha from Eq. 5
    # and characters ranked by corpus frequencies. Changing it needs a rebuild.
    xash_scheme: str = "authors"
    # eq5 only. The number of unique values alpha follows from (Eq. 5): the DWTC's 700M (§5.3.1), which
    # gives alpha = 6, 5, 4 at 128, 256, 512 bits. Frozen, like the character frequencies, so that stored
    # super keys keep covering the keys of the same values hashed later (§6.3); changing it needs a rebuild.
    unique_values: int = 700_000_000
    # eq5 only. Shares of the 37 character classes (§5.3.2) ranking the characters XASH encodes; None: the
    # shares measured on the MATE paper's sample tables (joinsearch.state.DEFAULT_CHAR_FREQUENCIES).
    char_frequencies: tuple[int, ...] | None = None
    # Tables a search returns when the request names no k.
    k: int = 10

    def __post_init__(self) -> None:
        if self.hash_bits not in (128, 256, 512):
            raise ValueError(f"joinsearch.hash_bits must be 128, 256 or 512, got {self.hash_bits}")
        if self.xash_scheme not in ("authors", "eq5"):
            raise ValueError(f"joinsearch.xash_scheme must be 'authors' or 'eq5', got {self.xash_scheme!r}")
        if self.char_frequencies is not None:
            object.__setattr__(self, "char_frequencies", tuple(int(f) for f in self.char_frequencies))


@dataclasses.dataclass(frozen=True)
class IndConfig:
    """Many's unary IND discovery (Many §4-§5)."""

    # Bloom bits per pass m, hash functions k, passes p: the paper's WikiTables setting (§5.2-§5.5).
    m: int = 650
    k: int = 6
    p: int = 2
    # Candidate generation: "dep2refs" or "ref2deps" (Alg. 5, 6), indexed bit-vectors (§4.5) or plain.
    strategy: str = "dep2refs"
    indexed: bool = True
    # Filters (§3.2, Alg. 10-11): "relational" (null columns only: integer keys matter), "web" (all four,
    # as the paper runs on web tables) or "none"; tau is the coverage bound of the fourth.
    filters: str = "relational"
    tau: float = 0.2
    # Null representations of the null filter; None: Table 2's.
    null_values: tuple[str, ...] | None = None
    # Beyond the paper (lakemeta.inds.containment): a column of at most this many distinct values keeps
    # their hashes in state/ind_columns (8 bytes each), and a candidate between two such columns is
    # validated on the driver, without a Spark job; 0 validates every candidate with Spark. At 128 a
    # signature of m = 650, k = 6 is past half full: larger columns are where Spark's join pays.
    driver_validation_values: int = 128
    # Beyond the paper (lakemeta.inds.columns): when the columns whose inputs are to be computed hold at
    # most this many distinct values in all, their value sets are read and summarised on the driver (a
    # few tables' buckets, read with delta-rs) rather than by a Spark job; 0 computes every input in Spark.
    # A batch of a few tables then costs no Spark job for its signatures (a large share of its discovery on
    # the 20,000 tables of bench/many_inds.py; docs/performance.md, "Measurements behind the code"), while a
    # first discovery of a lake stays distributed.
    driver_signature_values: int = 100_000
    # Beyond the paper (lakemeta.inds.sized_signatures): a column's signature doubles m up to this many times
    # so that a large column's does not fill up (k optimal for its size); candidates are checked again at the
    # finer level. 0 keeps the paper's one m for every column. At 5 a signature is at most 5.2 KiB.
    max_doublings: int = 5

    def __post_init__(self) -> None:
        if self.strategy not in ("dep2refs", "ref2deps"):
            raise ValueError(f"inds.strategy must be dep2refs or ref2deps, got {self.strategy!r}")
        if self.filters not in ("relational", "web", "none"):
            raise ValueError(f"inds.filters must be relational, web or none, got {self.filters!r}")
        if self.null_values is not None:
            object.__setattr__(self, "null_values", tuple(str(v) for v in self.null_values))
        if not 0 <= self.max_doublings <= 20:
            raise ValueError(f"inds.max_doublings must be between 0 and 20, got {self.max_doublings}")


@dataclasses.dataclass(frozen=True)
class FkConfig:
    """Foreign-key candidates and their ranking (Zhang et al. §2-§5, BML §5.3)."""

    # θ of Zhang §2 (their default 0.9); BML §5.3 prunes below 0.95 when exact containment is wanted.
    inclusion_threshold: float = 0.9
    # Quantiles l of the grid (Zhang §5.1): 256 for a single-column key, 16 per dimension otherwise.
    single_column_quantiles: int = 256
    multi_column_quantiles: int = 16

    def grid_quantiles(self, n_columns: int) -> int:
        """Quantiles per dimension for a key of ``n_columns``: the configured ones for one or two columns;
        beyond, as many as keep the grid within a two-column grid's cells (16 x 16: 6 per dimension for
        three columns, 4 for four), since the transportation problem grows with the square of the cells."""
        if n_columns == 1:
            return self.single_column_quantiles
        cells = self.multi_column_quantiles**2
        return max(2, min(self.multi_column_quantiles, int(cells ** (1 / n_columns) + 1e-9)))

    # Largest multi-column key taken from unique_column_combinations.
    max_key_columns: int = 4
    # §5.4: keep in the answer set only candidates whose column names match the key's.
    require_name_match: bool = False
    # The choice among candidates (lakemeta.fks.choice): whether names are a signal (the learned model
    # with names, lakemeta/fks/fk_model.json, or the one without); the score from which a dependent's best
    # candidate is accepted (None: the threshold the training chose); the share of an integer key below
    # which a dependent counting from its first value is a counter (a feature of the score); the share of
    # a table's columns included one-to-one in another's that makes the two an overlap
    # (lakemeta.fks.overlaps).
    name_signal: bool = True
    min_score: float | None = None
    prefix_share: float = 0.5
    overlap_share: float = 0.5
    # Keys declared by hand, added to those found: {table: [[column, ...], ...]}.
    declared_keys: Mapping[str, list[list[str]]] = dataclasses.field(default_factory=dict)
    # The lake's schemas (``schema_of``): a table's schema is its folder unless a pattern here matches its
    # path, {pattern: schema}, the first in order (fnmatch): {"erp/*": "erp", "erp_2019/*": "erp"} makes
    # two folders one schema, {"flat/shop_*": "shop", "flat/hr_*": "hr"} splits a flat folder by prefix.
    schemas: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def schema_of(self, table: str) -> str:
        """The schema of a table (its path relative to the lake root): the first of ``schemas`` whose
        pattern matches it, else its folder ("" at the root)."""
        for pattern, schema in self.schemas.items():
            if fnmatch.fnmatchcase(table, pattern):
                return schema
        return table.rsplit("/", 1)[0] if "/" in table else ""

    def __post_init__(self) -> None:
        if not 0 < self.inclusion_threshold <= 1:
            raise ValueError(f"fks.inclusion_threshold must be in (0, 1], got {self.inclusion_threshold}")
        if self.single_column_quantiles < 1 or self.multi_column_quantiles < 1:
            raise ValueError("fks quantiles must be positive")
        if self.min_score is not None and not 0 <= self.min_score <= 1:
            raise ValueError(f"fks.min_score must be in [0, 1], got {self.min_score}")
        for name in ("prefix_share", "overlap_share"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"fks.{name} must be in [0, 1], got {getattr(self, name)}")
        if not isinstance(self.schemas, Mapping) or not all(
            isinstance(pattern, str) and isinstance(schema, str) and pattern and schema
            for pattern, schema in self.schemas.items()
        ):
            raise ValueError(f"fks.schemas must map path patterns to schema names, got {self.schemas!r}")


@dataclasses.dataclass(frozen=True)
class ScanConfig:
    """The one read of a run's batches that every state component shares (``lakemeta.scan``)."""

    # Rows a task reads at most: small tables are packed into a task up to this many rows, a table built
    # from its snapshot is split into groups of files of at most this many rows (files permitting), and
    # the components take a task's rows in slices of this many.
    max_task_rows: int = 1_000_000
    # What the driver does itself rather than ask of Spark, where a Spark pass costs seconds whatever the
    # size: a run of a few tables whose snapshots are at most this many bytes in all is scanned on the
    # driver (``BatchScan.reads_on_driver``), the FK step's exact checks read tables of at most this many
    # bytes in all there, and a component whose staged partial rows and whose stored files holding the
    # batch's tables are each at most this many bytes merges its delta on the driver
    # (``StateComponent.update``) rather than by a Spark MERGE; 0 sends everything through Spark.
    driver_state_bytes: int = 16 << 20
    # The column pairs a discovery step may hold on the driver (the inclusion estimates' pairs, Many's
    # candidates): beyond them its pairs are made, checked and written by the executors whatever the
    # bytes it reads. A lake of small real tables is small in bytes yet has tens of millions of
    # overlapping column pairs, which no driver should hold; below the bound a step is faster on the
    # driver, as a Spark pass costs seconds of jobs and Python workers whatever its size.
    driver_max_pairs: int = 1 << 21

    def __post_init__(self) -> None:
        if self.max_task_rows < 1:
            raise ValueError(f"scan.max_task_rows must be positive, got {self.max_task_rows}")
        if self.driver_state_bytes < 0:
            raise ValueError(f"scan.driver_state_bytes must not be negative, got {self.driver_state_bytes}")
        if self.driver_max_pairs < 0:
            raise ValueError(f"scan.driver_max_pairs must not be negative, got {self.driver_max_pairs}")


@dataclasses.dataclass(frozen=True)
class MaintenanceConfig:
    """Table maintenance of the catalog (``lakemeta.orchestration.maintenance``)."""

    # Versions committed this many days back stay readable (time travel, ``show --as-of``); the published
    # versions stay readable however old.
    retention_days: float = 7.0

    def __post_init__(self) -> None:
        if self.retention_days < 0:
            raise ValueError(f"maintenance.retention_days must not be negative, got {self.retention_days}")

    @property
    def retention(self) -> timedelta:
        return timedelta(days=self.retention_days)


@dataclasses.dataclass(frozen=True)
class Config:
    # Local folders or object-store prefixes (``lakemeta.storage``): /data/lake, file:///data/lake,
    # s3://bucket/lake.
    lake: Location | None = None  # a str or Path given is parsed (Location.parse)
    catalog: Location | None = None
    spark_master: str = "local[*]"
    # A Spark Connect server to run on instead of a Spark of this process (``lakemeta.spark.connect``):
    # sc://localhost:15002. Its master is the server's.
    spark_remote: str | None = None
    # The metastore of the Spark SQL database ``lakemeta``: None for Spark's embedded one beside the
    # catalog, or an external Hive metastore's URI (thrift://host:9083).
    metastore_uri: str | None = None
    ingest: IngestConfig = dataclasses.field(default_factory=IngestConfig)
    scan: ScanConfig = dataclasses.field(default_factory=ScanConfig)
    sketches: SketchConfig = dataclasses.field(default_factory=SketchConfig)
    agree_sets: AgreeSetConfig = dataclasses.field(default_factory=AgreeSetConfig)
    joinsearch: JoinSearchConfig = dataclasses.field(default_factory=JoinSearchConfig)
    inds: IndConfig = dataclasses.field(default_factory=IndConfig)
    fks: FkConfig = dataclasses.field(default_factory=FkConfig)
    maintenance: MaintenanceConfig = dataclasses.field(default_factory=MaintenanceConfig)

    def __post_init__(self) -> None:
        for name in ("lake", "catalog"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, Location.parse(getattr(self, name)))
        if self.agree_sets.max_rows > self.scan.max_task_rows:
            raise ValueError(
                f"agree_sets.max_rows ({self.agree_sets.max_rows}) must not exceed scan.max_task_rows "
                f"({self.scan.max_task_rows}): a table whose agree-sets are kept is read whole by one task"
            )

    def discovery_settings(self) -> str:
        """The sections discovery reads, as canonical JSON: results computed with other settings are
        computed again (``lakemeta.catalog.freshness``). Locations, scheduling, ingest and the scan's
        task sizes do not change a result."""
        sections = ("sketches", "agree_sets", "joinsearch", "inds", "fks")
        return settings_of(**{name: getattr(self, name) for name in sections})

    def require_paths(self) -> tuple[Location, Location]:
        """The lake and catalog roots, or a clear error naming how to set them."""
        if self.lake is None or self.catalog is None:
            raise ValueError(
                "lake and catalog must be set: pass --lake/--catalog, set LAKEMETA_LAKE/LAKEMETA_CATALOG, "
                "or name them in the file given by LAKEMETA_CONFIG"
            )
        return self.lake, self.catalog


def settings_of(**sections: object) -> str:
    """Configuration sections (dataclasses, or plain values such as a rule's version, by name) as canonical
    JSON: how a result records the settings it was computed with, so that equal settings compare equal as
    text."""
    return json.dumps(
        {
            name: dataclasses.asdict(section) if dataclasses.is_dataclass(section) else section
            for name, section in sections.items()
        },
        sort_keys=True,
        default=str,
    )


_ENV_KEYS = {
    "lake": "LAKEMETA_LAKE",
    "catalog": "LAKEMETA_CATALOG",
    "spark_master": "LAKEMETA_SPARK_MASTER",
    "spark_remote": "LAKEMETA_SPARK_REMOTE",
}


def load_config(
    overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> Config:
    """Build the configuration from defaults, LAKEMETA_CONFIG, the environment and ``overrides``.

    ``overrides`` holds top-level keys (``lake``, ``catalog``, ...) or section dicts (``ingest``);
    ``None`` values are ignored so that unset CLI flags leave lower layers in force.
    """
    environ = os.environ if environ is None else environ
    layers: list[Mapping[str, Any]] = []
    config_file = environ.get("LAKEMETA_CONFIG")
    if config_file:
        with open(config_file, encoding="utf-8") as handle:
            layers.append(yaml.safe_load(handle) or {})
    layers.append({key: environ[var] for key, var in _ENV_KEYS.items() if environ.get(var)})
    layers.append(overrides or {})

    merged: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if value is None:
                continue
            if isinstance(value, Mapping):
                merged[key] = {**merged.get(key, {}), **{k: v for k, v in value.items() if v is not None}}
            else:
                merged[key] = value
    return _build(merged)


def parse_settings(settings: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` or ``SECTION.KEY=VALUE`` settings (``fks.inclusion_threshold=0.95``) as ``load_config``
    overrides; values are read as YAML scalars, so numbers, booleans and ``null`` keep their types."""
    overrides: dict[str, Any] = {}
    for setting in settings:
        name, equals, text = setting.partition("=")
        if not equals or not name.strip():
            raise ValueError(f"a setting is KEY=VALUE or SECTION.KEY=VALUE, got {setting!r}")
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise ValueError(f"setting {setting!r}: the value is not YAML: {error}") from error
        section, dot, key = name.strip().partition(".")
        if dot:
            overrides.setdefault(section, {})[key] = value
        else:
            overrides[section] = value
    return overrides


def add_settings_argument(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, dest: str = "settings"
) -> None:
    """The ``--set SECTION.KEY=VALUE`` option (repeatable) of the CLI and of every job, read by
    :func:`parse_settings`; the settings go to the list ``dest``."""
    parser.add_argument(
        "--set",
        dest=dest,
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override a configuration value, e.g. fks.inclusion_threshold=0.95 (repeatable)",
    )


def add_location_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, default: object = None
) -> None:
    """The ``--lake`` and ``--catalog`` options, which override the configured locations; ``default`` is
    their value when not given (``argparse.SUPPRESS``: none)."""
    parser.add_argument(
        "--lake",
        default=default,
        help="lake root, a folder or s3://bucket/prefix (default: LAKEMETA_LAKE / config file)",
    )
    parser.add_argument(
        "--catalog",
        default=default,
        help="catalog root, a folder or s3://bucket/prefix (default: LAKEMETA_CATALOG / config file)",
    )


def add_joinable_query_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a joinable-table search (``lakemeta joinable`` and the search DAG's step): the query
    table and its key columns, and the settings of ``joinsearch`` a search may override."""
    parser.add_argument("--query", required=True, help="lake table name, or CSV / Parquet file in the lake")
    parser.add_argument("--key", required=True, help="key columns of the query, comma-separated")
    parser.add_argument("--k", type=int, help="tables to return (default: joinsearch.k)")
    parser.add_argument(
        "--hash-bits",
        type=int,
        choices=[128, 256, 512],
        help="super-key size (default: joinsearch.hash_bits)",
    )


def _build(values: dict[str, Any]) -> Config:
    known = {field.name for field in dataclasses.fields(Config)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown configuration keys: {', '.join(unknown)}")
    kwargs: dict[str, Any] = dict(values)
    for key in ("lake", "catalog"):
        if key in kwargs:
            kwargs[key] = Location.parse(kwargs[key])
    for section, section_class in _SECTIONS.items():
        if section in kwargs:
            kwargs[section] = _section(section, section_class, kwargs[section])
    return Config(**kwargs)


_SECTIONS: dict[str, type] = {
    "ingest": IngestConfig,
    "scan": ScanConfig,
    "sketches": SketchConfig,
    "agree_sets": AgreeSetConfig,
    "joinsearch": JoinSearchConfig,
    "inds": IndConfig,
    "fks": FkConfig,
    "maintenance": MaintenanceConfig,
}


def _section(name: str, section_class: type, values: Mapping[str, Any]) -> Any:
    known = {field.name for field in dataclasses.fields(section_class)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown configuration keys in {name}: {', '.join(unknown)}")
    return section_class(**values)
