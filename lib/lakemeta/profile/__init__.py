"""Column profiles: row and null counts per column, maintained from change batches."""
