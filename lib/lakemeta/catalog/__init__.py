"""The metadata catalog: Delta schemas of state and results, readers and writers."""

from lakemeta.catalog.schemas import ALL_SCHEMAS, CATALOG_SCHEMAS, STATE_SCHEMAS
from lakemeta.catalog.store import Catalog, NegativeCountError, Txn

__all__ = ["ALL_SCHEMAS", "CATALOG_SCHEMAS", "STATE_SCHEMAS", "Catalog", "NegativeCountError", "Txn"]
