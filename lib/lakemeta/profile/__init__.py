"""Column profiles: row and null counts per column, maintained from change batches with Spark (``state``:
the state component ``column_profile``, which also records each batch's size)."""
