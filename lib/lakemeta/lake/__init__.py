"""The lake: finding tables, ingesting files, change batches (CDF or snapshot diff), watermarks."""
