"""Exact value sets of columns: each column's distinct canonical values as 64-bit hashes, with the number of
rows holding each (``hashes``), kept as incremental state (``state``) and probed for exact inclusion
coefficients (``inclusion``)."""
