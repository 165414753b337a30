"""Where the lake and the catalog live: a local folder or an object store, behind one ``Location``.

Every module reaches storage through a :class:`Location` (a URI: ``/abs/path``, ``file:///abs/path`` or
``s3://bucket/prefix``): delta-rs tables with the right storage options, pyarrow file systems for listing
and for the few plain files lakemeta writes, and the Spark settings and jars that let Spark address the
same URI. What differs per scheme lives in one :class:`Backend` entry of ``BACKENDS``; adding ``gs://`` or
``abfss://`` is a new entry there (docs/operations.md, "Object storage", says what each would need).

Credentials come the standard way, from the process's environment (``AWS_ACCESS_KEY_ID``, ...) or the
provider chain behind it (an AWS profile, an instance role), in the driver and in every executor alike:
they are never put in a Spark setting, a command line, a log line or the catalog.
"""

from __future__ import annotations

import functools
import os
import posixpath
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlparse

import deltalake
import obstore
import obstore.exceptions
import obstore.store
import pyarrow as pa
import pyarrow.dataset
import pyarrow.fs as pafs

T = TypeVar("T")

REPO_ROOT = Path(__file__).resolve().parents[2]


class StorageError(RuntimeError):
    """A location cannot be reached or read: names the URI, never a credential."""


class Backend:
    """What one URI scheme needs from each engine. The local file system is the base case."""

    scheme = "file"

    def storage_options(self) -> dict[str, str]:
        """delta-rs's storage options (object_store configuration keys)."""
        return {}

    def filesystem(self) -> pafs.FileSystem:
        return pafs.LocalFileSystem()

    def fs_path(self, uri: str) -> str:
        """The path of ``uri`` inside :meth:`filesystem`."""
        return uri

    def object_store(self, uri: str) -> tuple[obstore.store.ObjectStore, str]:
        """An object store client (obstore) for ``uri``'s bucket and the key of ``uri`` in it: listing,
        small files and the conditional writes the leases are built on."""
        return _local_store(), uri.lstrip("/")

    def spark_conf(self) -> dict[str, str]:
        """Spark settings that make the scheme's URIs readable and writable by Spark and Delta."""
        return {}


@dataclass(frozen=True)
class S3Settings:
    """The standard AWS variables of the process's environment. Keys left unset leave each engine to its
    AWS provider chain (profile, web identity, instance role)."""

    access_key_id: str | None
    secret_access_key: str | None
    session_token: str | None
    region: str
    endpoint: str | None  # AWS_ENDPOINT_URL: an S3-compatible server (path-style requests)
    allow_http: bool

    @staticmethod
    def from_environment() -> S3Settings:
        env = os.environ
        return S3Settings(
            access_key_id=env.get("AWS_ACCESS_KEY_ID") or None,
            secret_access_key=env.get("AWS_SECRET_ACCESS_KEY") or None,
            session_token=env.get("AWS_SESSION_TOKEN") or None,
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
            endpoint=(env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or "").rstrip("/")
            or None,
            allow_http=env.get("AWS_ALLOW_HTTP", "").lower() == "true",
        )

    def object_store_config(self) -> dict[str, str]:
        """object_store's S3 configuration, shared by delta-rs (storage options, ``aws_`` prefixed) and
        obstore (bare names)."""
        config = {
            "access_key_id": self.access_key_id,
            "secret_access_key": self.secret_access_key,
            "session_token": self.session_token,
            "region": self.region,
            "endpoint": self.endpoint,
            # Delta commits must never overwrite one another: a commit, and a lease's next record, is
            # a conditional PUT (If-None-Match), which S3 and the S3-compatible servers tested here honour.
            "conditional_put": "etag",
        }
        return {name: value for name, value in config.items() if value is not None}


class S3Backend(Backend):
    """Amazon S3 and S3-compatible stores: delta-rs's and obstore's object_store, pyarrow's S3FileSystem
    and Hadoop's S3A connector, all configured from the standard AWS variables (:class:`S3Settings`).
    A custom endpoint implies path-style requests, the addressing S3-compatible servers serve;
    ``AWS_ALLOW_HTTP=true`` admits a plain-HTTP endpoint."""

    scheme = "s3"

    def storage_options(self) -> dict[str, str]:
        settings = S3Settings.from_environment()
        options = {f"aws_{name}": value for name, value in settings.object_store_config().items()}
        options["aws_allow_http"] = str(settings.allow_http).lower()
        # An unreachable endpoint fails in seconds, not after object_store's ten retries and three minutes.
        options["connect_timeout"] = "5s"
        options["max_retries"] = "3"
        options["retry_timeout"] = "20s"
        return options

    def filesystem(self) -> pafs.FileSystem:
        return _s3_filesystem(S3Settings.from_environment())

    def fs_path(self, uri: str) -> str:
        return uri.removeprefix("s3://")

    def object_store(self, uri: str) -> tuple[obstore.store.ObjectStore, str]:
        bucket, _, key = self.fs_path(uri).partition("/")
        return _s3_store(bucket, S3Settings.from_environment()), key

    def spark_conf(self) -> dict[str, str]:
        # Spark and Delta address the bucket as s3:// through Hadoop's S3A connector, so that the engines
        # share one URI. Credentials stay out of the settings: the SDK's default chain reads the
        # environment (or profile, or instance role) of the driver and of each executor. Delta's log store
        # for s3 (S3SingleDriverLogStore) is safe here because lakemeta's leases give every table it writes
        # one writer at a time (docs/operations.md, "Object storage").
        settings = S3Settings.from_environment()
        conf = {
            "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
            "spark.hadoop.fs.s3a.aws.credentials.provider": (
                "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider"
            ),
            "spark.hadoop.fs.s3a.endpoint.region": settings.region,
            "spark.hadoop.fs.s3a.connection.establish.timeout": "5s",
            "spark.hadoop.fs.s3a.attempts.maximum": "3",
            "spark.hadoop.fs.s3a.retry.limit": "3",
        }
        if settings.endpoint:
            conf["spark.hadoop.fs.s3a.endpoint"] = settings.endpoint
            conf["spark.hadoop.fs.s3a.path.style.access"] = "true"
            conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(
                settings.endpoint.startswith("https")
            ).lower()
        # The connector (hadoop-aws with the large AWS SDK bundle) joins the class path of the driver and
        # of every executor from the folder set-up fetched it to on each host, rather than being shipped to
        # every executor of every application as spark.jars would.
        folder = Path(os.environ.get("LAKEMETA_JARS", REPO_ROOT / ".cache" / "jars")) / "s3"
        jars = sorted(str(path) for path in folder.glob("*.jar"))
        if not any("hadoop-aws" in Path(jar).name for jar in jars):
            raise RuntimeError(f"Hadoop's S3A jars not found in {folder}: run `make setup` first")
        conf["spark.driver.extraClassPath"] = conf["spark.executor.extraClassPath"] = ":".join(jars)
        return conf


# One client per set of credentials and process (a changed environment gets a new one).
@functools.cache
def _s3_filesystem(settings: S3Settings) -> pafs.FileSystem:
    endpoint = urlparse(settings.endpoint) if settings.endpoint else None
    return pafs.S3FileSystem(
        access_key=settings.access_key_id,
        secret_key=settings.secret_access_key,
        session_token=settings.session_token,
        region=settings.region,
        endpoint_override=endpoint.netloc if endpoint else None,
        scheme=endpoint.scheme if endpoint else "https",
        force_virtual_addressing=False,
        connect_timeout=5,
        request_timeout=60,
        retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=3),
    )


@functools.cache
def _s3_store(bucket: str, settings: S3Settings) -> obstore.store.ObjectStore:
    return obstore.store.S3Store(
        bucket,
        config=settings.object_store_config(),
        client_options={"allow_http": settings.allow_http, "connect_timeout": timedelta(seconds=5)},
        retry_config={"max_retries": 3, "retry_timeout": timedelta(seconds=20)},
    )


@functools.cache
def _local_store() -> obstore.store.LocalStore:
    # Rooted at / so that a key is an absolute path less its first slash; emptied folders are removed.
    return obstore.store.LocalStore("/", automatic_cleanup=True)


BACKENDS: dict[str, Backend] = {"file": Backend(), "s3": S3Backend()}
_ALIASES = {"s3a": "s3", "": "file"}


@dataclass(frozen=True)
class Location:
    """A folder or object prefix by URI: an absolute local path (``file://`` is dropped) or
    ``<scheme>://bucket/prefix``, never with a trailing slash. ``location / "name"`` goes below it."""

    uri: str

    @staticmethod
    def parse(text: str | os.PathLike[str] | Location) -> Location:
        """A location from a path or URI as a user gives it; a local path is made absolute."""
        if isinstance(text, Location):
            return text
        text = os.fspath(text)
        scheme, _, rest = text.partition("://") if "://" in text else ("", "", text)
        scheme = _ALIASES.get(scheme.lower(), scheme.lower())
        if scheme not in BACKENDS:
            known = ", ".join(f"{name}://" for name in BACKENDS)
            raise ValueError(f"unsupported location {text!r}: lakemeta reads local paths, {known}")
        if scheme == "file":
            return Location(str(Path(rest).expanduser().resolve()))
        if not rest.strip("/"):
            raise ValueError(f"location {text!r} names no bucket")
        return Location(f"{scheme}://{rest.strip('/')}")

    def __str__(self) -> str:
        return self.uri

    def __truediv__(self, part: str) -> Location:
        part = part.strip("/")
        return Location(f"{self.uri}/{part}") if part else self

    @property
    def scheme(self) -> str:
        return self.uri.partition("://")[0] if "://" in self.uri else "file"

    @property
    def is_local(self) -> bool:
        return self.scheme == "file"

    @property
    def backend(self) -> Backend:
        return BACKENDS[self.scheme]

    @property
    def name(self) -> str:
        return posixpath.basename(self.uri)

    def local_path(self) -> Path:
        """The local folder, for what only a local file system can hold; a clear error otherwise."""
        if not self.is_local:
            raise ValueError(f"{self.uri} is not a local folder")
        return Path(self.uri)

    def contains(self, other: Location) -> bool:
        """Whether ``other`` lies strictly below this location."""
        return other.uri.startswith(self.uri.rstrip("/") + "/")

    def relative(self, other: Location) -> str:
        """``other``'s path below this location (``tpch/lineitem``)."""
        if not self.contains(other):
            raise ValueError(f"{other} is not inside {self}")
        return other.uri[len(self.uri.rstrip("/")) + 1 :]

    # -- delta-rs ------------------------------------------------------------------------------------

    def storage_options(self) -> dict[str, str]:
        return self.backend.storage_options()

    def delta_table(self, version: int | None = None) -> deltalake.DeltaTable:
        """The Delta table here, at ``version`` (the newest when None)."""
        return deltalake.DeltaTable(self.uri, version=version, storage_options=self.storage_options())

    def delta_dataset(
        self,
        table: deltalake.DeltaTable | None = None,
        file_pruning_predicate: list[tuple[str, str, object]] | None = None,
    ) -> pyarrow.dataset.Dataset:
        """The rows of the Delta table here (of ``table``, a version of it already opened, else the newest)
        as a pyarrow dataset, only the files ``file_pruning_predicate`` keeps (delta-rs's DNF filters).

        This is how lakemeta reads a Delta table without Spark. pyarrow reads the data files with its own
        file system (:attr:`filesystem`): with delta-rs's default one, which calls Rust through Python from
        pyarrow's reader threads, a process that read an object store aborts now and then at exit ("terminate
        called without an active exception", delta-rs issue 2184): 21 of 160 short reads of S3 under load,
        0 of 200 this way."""
        table = self.delta_table() if table is None else table
        return table.to_pyarrow_dataset(
            filesystem=pafs.SubTreeFileSystem(self.fs_path, self.filesystem),
            file_pruning_predicate=file_pruning_predicate,
        )

    def write_delta(
        self,
        data: pa.Table | pa.RecordBatchReader,
        table: deltalake.DeltaTable | None = None,
        **options: object,
    ) -> None:
        """``deltalake.write_deltalake`` here with the location's storage options; through ``table``, the
        table here already opened, when given (delta-rs opens it otherwise, and moves ``table`` to the
        version it commits)."""
        deltalake.write_deltalake(
            self.uri if table is None else table, data, storage_options=self.storage_options(), **options
        )

    def create_delta(
        self,
        schema: pa.Schema,
        partition_by: Sequence[str] = (),
        configuration: Mapping[str, str] | None = None,
    ) -> None:
        """Create an empty Delta table here with ``schema`` (partitioned by ``partition_by``, with the table
        properties ``configuration``) unless one exists."""
        deltalake.DeltaTable.create(
            self.uri,
            schema=schema,
            mode="ignore",
            partition_by=list(partition_by) or None,
            configuration=dict(configuration) if configuration else None,
            storage_options=self.storage_options(),
        )

    # -- objects -------------------------------------------------------------------------------------

    @property
    def filesystem(self) -> pafs.FileSystem:
        """A pyarrow file system for Parquet datasets of the data files here."""
        return self.backend.filesystem()

    @property
    def fs_path(self) -> str:
        return self.backend.fs_path(self.uri)

    def _store(self) -> tuple[obstore.store.ObjectStore, str]:
        return self.backend.object_store(self.uri)

    def exists(self) -> bool:
        """Whether any object below this location, or a file, is here. Callers ask about folders (a
        lake, a catalog, a staging partition), so the listing goes first: one request when it is."""
        if self.children():
            return True
        store, key = self._store()
        return self._call(lambda: _head(store, key)) is not None

    def is_delta_table(self) -> bool:
        return any(is_dir and name == "_delta_log" for name, is_dir in self.children())

    def children(self) -> list[tuple[str, bool]]:
        """The names directly below (one listing request on an object store), each with whether it is a
        folder (a prefix holding objects); empty when nothing is here."""
        store, key = self._store()
        found = self._call(lambda: obstore.list_with_delimiter(store, key + "/"))
        folders = [(posixpath.basename(p.rstrip("/")), True) for p in found["common_prefixes"]]
        files = [(posixpath.basename(o["path"]), False) for o in found["objects"]]
        return sorted(folders + files)

    def files(self) -> set[str]:
        """Every file below, as paths relative to this location (one recursive listing)."""
        store, key = self._store()
        prefix = key + "/"

        def listing() -> set[str]:
            listed = [
                (o["path"].removeprefix(prefix), o["size"])
                for part in obstore.list(store, prefix)
                for o in part
            ]
            # A directory marker (an empty "dir/" object, as Hadoop's S3A writes) is listed as an empty
            # "dir": an empty entry is a file only if it can be read.
            return {name for name, size in listed if size or _readable(store, prefix + name)}

        return self._call(listing)

    def size(self) -> int:
        """The bytes of every file below (one recursive listing)."""
        store, key = self._store()
        return self._call(lambda: sum(o["size"] for part in obstore.list(store, key + "/") for o in part))

    def read_bytes(self) -> bytes:
        store, key = self._store()
        return self._call(lambda: bytes(obstore.get(store, key).bytes()))

    def read_text(self) -> str:
        return self.read_bytes().decode("utf-8")

    def write_bytes(self, data: bytes) -> None:
        """Write the file whole or not at all (an object store shows an object only when its upload
        completes; on local disk the store writes a temporary file and renames it)."""
        store, key = self._store()
        self._call(lambda: obstore.put(store, key, data))

    def write_text(self, text: str) -> None:
        self.write_bytes(text.encode("utf-8"))

    def create_text(self, text: str) -> bool:
        """Write the file only if nothing is there yet, atomically (a conditional write: ``If-None-Match``
        on S3, a hard link on local disk); False when a file was there already."""
        store, key = self._store()
        try:
            obstore.put(store, key, text.encode("utf-8"), mode="create")
        except obstore.exceptions.AlreadyExistsError:
            return False
        except (obstore.exceptions.BaseError, OSError) as error:
            raise StorageError(f"{self.uri}: {_without_secrets(str(error))}") from error
        return True

    def delete(self, names: Sequence[str]) -> None:
        """Delete the files ``names`` (relative paths) below; a name already gone is not an error."""
        store, key = self._store()
        if not self.is_local:  # one DeleteObjects request; S3 counts a missing key as deleted
            if names:
                self._call(lambda: obstore.delete(store, [f"{key}/{name}" for name in names]))
            return
        for name in names:  # the local store stops at the first missing file: one by one
            try:
                self._call(lambda name=name: obstore.delete(store, f"{key}/{name}"))
            except FileNotFoundError:
                continue

    def copy_tree(self, target: Location) -> None:
        """Copy every file below here to the same relative path below ``target``, byte for byte (a
        lake copied this way keeps its tables, logs and table ids)."""
        for name in sorted(self.files()):
            (target / name).write_bytes((self / name).read_bytes())

    def remove_tree(self) -> None:
        """Remove every file below (and, on local disk, the folders); nothing happens when nothing is
        here."""
        if self.is_local:
            shutil.rmtree(self.uri, ignore_errors=True)
        else:
            self.delete(sorted(self.files()))

    @property
    def parent(self) -> Location:
        """The location above; a bucket (or ``/``) is its own parent."""
        scheme, _, rest = self.uri.rpartition("://")
        head = posixpath.dirname(rest)
        return Location(f"{scheme}://{head}" if scheme else head) if head else self

    def _call(self, action: Callable[[], T]) -> T:
        """Run a storage request; its failure as a StorageError naming this location (not a secret)."""
        try:
            return action()
        except (obstore.exceptions.NotFoundError, FileNotFoundError) as error:
            raise FileNotFoundError(f"{self.uri}: not found") from error
        except (obstore.exceptions.BaseError, OSError) as error:
            raise StorageError(f"{self.uri}: {_without_secrets(str(error))}") from error

    def walk_tables(self) -> Iterator[Location]:
        """The Delta tables below: every folder holding ``_delta_log``, not searched further; folders
        whose name starts with ``_`` or ``.`` are skipped (quarantine, Spark's and lakemeta's own)."""
        pending = [self]
        while pending:
            folder = pending.pop()
            entries = folder.children()
            if any(name == "_delta_log" and is_dir for name, is_dir in entries):
                if folder != self:
                    yield folder
                continue
            pending.extend(
                folder / name
                for name, is_dir in reversed(entries)
                if is_dir and not name.startswith(("_", "."))
            )


def _head(store: obstore.store.ObjectStore, key: str) -> dict | None:
    try:
        return obstore.head(store, key)
    except (obstore.exceptions.NotFoundError, FileNotFoundError):
        return None


def _readable(store: obstore.store.ObjectStore, key: str) -> bool:
    try:
        obstore.get(store, key).bytes()
    except (obstore.exceptions.NotFoundError, FileNotFoundError, IsADirectoryError):
        return False
    return True


def _without_secrets(message: str) -> str:
    """An error message with every credential of the environment blanked out (engines quote requests)."""
    for variable in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        secret = os.environ.get(variable)
        if secret:
            message = message.replace(secret, "***")
    return message


def spark_settings(locations: Iterable[Location | None]) -> dict[str, str]:
    """The Spark settings of a session that reads and writes ``locations``."""
    conf: dict[str, str] = {}
    for backend in {location.backend for location in locations if location is not None}:
        conf.update(backend.spark_conf())
    return conf
