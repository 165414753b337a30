"""Great Expectations suites over the catalog, and the gate that audits a catalog before it is published."""
