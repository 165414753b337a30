"""The metadata catalog: the schemas of its own tables (results and bookkeeping), its reader and writer
(Spark for state, delta-rs for small tables), the idempotent MERGE of counts, the locks that order runs and
rebuilds, and the tables derived from state (``tables``, ``columns``)."""

from lakemeta.catalog.merges import NegativeCountError
from lakemeta.catalog.schemas import CATALOG_SCHEMAS, OWN_SCHEMAS
from lakemeta.catalog.store import Catalog, Txn

__all__ = ["CATALOG_SCHEMAS", "OWN_SCHEMAS", "Catalog", "NegativeCountError", "Txn"]
