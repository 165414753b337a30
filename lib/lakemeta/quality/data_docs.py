"""Data Docs of the quality gate: Great Expectations' static HTML site of the last audits, beside their
results, at ``<catalog>/_quality/data_docs/index.html``.

The site is a view derived from the audit results (``<catalog>/_quality/audit-<time>.json``, which hold
each suite's GX validation result): each audit puts the results of the last ``AUDITS_SHOWN`` audits in
its context's validation results store, renders its own results' and suites' pages, and rebuilds the
index. GX's index builder removes the pages of results no longer in the store ("skip_and_clean_missing",
great_expectations/render/renderer/site_builder.py), so the site holds the last ``AUDITS_SHOWN`` audits
and no more, and pruning old audit files prunes the site at the next audit.

The site is written through a ``Location`` (:class:`LocationStoreBackend`), so a catalog on object storage
has its site in the bucket beside its results, reached with the catalog's own credentials (the process's
AWS variables, as delta-rs and obstore read them). GX's own S3 site backend would need boto3, which
lakemeta does not install, and a second client configured apart from ``lakemeta.storage``.
"""

from __future__ import annotations

import json
from typing import Any

from great_expectations.core.run_identifier import RunIdentifier
from great_expectations.data_context import AbstractDataContext
from great_expectations.data_context.store.tuple_store_backend import TupleStoreBackend
from great_expectations.data_context.types.resource_identifiers import (
    ExpectationSuiteIdentifier,
    ValidationResultIdentifier,
)
from great_expectations.exceptions import InvalidKeyError

from lakemeta.quality.results import AUDITS_SHOWN
from lakemeta.storage import Location

SITE_NAME = "lakemeta_quality"
DATA_DOCS_FOLDER = "data_docs"


class LocationStoreBackend(TupleStoreBackend):
    """GX's ``TupleFilesystemStoreBackend`` over a :class:`Location` (a local folder or an object-store
    prefix): keys are files below ``base_uri``, each written whole or not at all."""

    def __init__(self, base_uri: str, **tuple_options: Any) -> None:
        super().__init__(**tuple_options)
        self.root = Location.parse(base_uri)
        self._config = {
            "base_uri": base_uri,
            **tuple_options,
            "module_name": type(self).__module__,
            "class_name": type(self).__name__,
        }

    def _file(self, key: Any) -> Location:
        return self.root / self._convert_key_to_filepath(key if isinstance(key, tuple) else key.to_tuple())

    def _get(self, key: Any) -> str:
        try:
            return self._file(key).read_text()
        except FileNotFoundError as error:
            raise InvalidKeyError(f"no object for key {key} in {self.root}") from error

    def _get_all(self) -> list[Any]:
        return [self._get(key) for key in self.list_keys() if key != self.STORE_BACKEND_ID_KEY]

    def _set(self, key: Any, value: str | bytes, **_options: Any) -> str:
        target = self._file(key)
        target.write_bytes(value.encode("utf-8") if isinstance(value, str) else value)
        return target.uri

    def _move(self, source_key: Any, dest_key: Any, **_options: Any) -> None:
        raise NotImplementedError("the Data Docs site never moves a page")

    def list_keys(self, prefix: tuple = ()) -> list[tuple]:
        folder = self.root / "/".join(prefix)
        keys = []
        for name in sorted(folder.files()):
            path = "/".join([*prefix, name])
            if self._is_missing_prefix_or_suffix(self.filepath_prefix, self.filepath_suffix, path):
                continue
            key = self._convert_filepath_to_key(path)
            if key and not self.is_ignored_key(key):
                keys.append(key)
        return keys

    def remove_key(self, key: Any) -> bool:
        self.root.delete([self._convert_key_to_filepath(key if isinstance(key, tuple) else key.to_tuple())])
        return True

    def get_url_for_key(self, key: Any, protocol: str | None = None) -> str:
        target = self._file(key)
        return f"file://{target.uri}" if target.is_local else target.uri

    def _has_key(self, key: Any) -> bool:
        return self._file(key).exists()

    @property
    def config(self) -> dict:
        return self._config


def data_docs_index(quality: Location) -> Location:
    """Where the index page of the Data Docs of the audits in ``quality`` (``<catalog>/_quality``) is."""
    return quality / DATA_DOCS_FOLDER / "index.html"


def recorded_result(result: Any) -> dict:
    """A suite's validation result as the audit records it: GX's JSON, and the id of the batch it
    validated, which GX keeps only in the result's store key."""
    return {**result.to_json_dict(), "batch_id": result.batch_id}


def _stored(recorded: dict) -> tuple[ValidationResultIdentifier, str]:
    """The store key of a validation result that an audit recorded (``recorded_result``), and the result
    as a validation results store holds it: GX's JSON."""
    result = {name: value for name, value in recorded.items() if name != "batch_id"}
    run = result["meta"]["run_id"]
    run_id = RunIdentifier(run_name=run["run_name"], run_time=run["run_time"])
    suite = ExpectationSuiteIdentifier(result["suite_name"])
    return ValidationResultIdentifier(suite, run_id, recorded["batch_id"]), json.dumps(result)


def store_result(context: AbstractDataContext, recorded: dict) -> None:
    """Put a validation result as an audit records it (``recorded_result``) in ``context``'s validation
    results store, in place of any result of the same suite, run and batch."""
    key, result = _stored(recorded)
    store = context.validation_results_store
    # The recorded JSON goes to the store as is: GX would parse it and serialise it again.
    store.store_backend.set(store.key_to_tuple(key), result)


def render_data_docs(context: AbstractDataContext, quality: Location, current: str) -> Location:
    """Render the Data Docs of the audit whose suites and results ``context`` holds (the audit file
    ``current`` in ``quality``) and of the audits before it; the index page's location."""
    store = context.validation_results_store
    rendered: list[Any] = [*store.list_keys(), *context.expectations_store.list_keys()]
    audits = sorted(
        name for name, _ in quality.children() if name.startswith("audit-") and name.endswith(".json")
    )
    for name in audits[-AUDITS_SHOWN:]:
        if name == current:
            continue
        for recorded in json.loads((quality / name).read_text())["suites"].values():
            if "batch_id" in recorded:  # audits before Data Docs recorded no batch ids: not shown
                store_result(context, recorded)
    site = quality / DATA_DOCS_FOLDER
    context.add_data_docs_site(
        SITE_NAME,
        {
            "class_name": "SiteBuilder",
            "store_backend": {
                "class_name": LocationStoreBackend.__name__,
                "module_name": __name__,
                "base_uri": site.uri,
            },
            "show_how_to_buttons": False,  # GX's tutorial buttons: nothing a reader of these audits needs
        },
    )
    context.build_data_docs(site_names=[SITE_NAME], resource_identifiers=rendered)
    return data_docs_index(quality)
