"""Unary inclusion dependencies with Many (Tschirschnitz, Papenbrock, Naumann, TODS 2017).

bloom      Bloom bit-signatures per column: m, k, p passes (§4.1, §4.3)
matrix     the bit-signature matrix (Alg. 3)
proposer   IND-Proposer: dep2refs / ref2deps, plain or indexed bit-vectors, ranges (Alg. 4-6, 8-9, §4.5)
filters    null / integer / non-unique / coverage filters (§3.2, Alg. 10-11), non-null strings
config     Many's parameters, from the ``inds`` configuration section
columns    Many's inputs per column (signature, filter statistics) from the state's value sets, kept as
           ``state/ind_columns``
discover   the discovery step with Spark: candidates and exact validation over the value sets into the
           catalog's ``inclusion_dependencies`` (Alg. 3, 7-11), computed again only for changed tables
containment  exact validation of small columns on the driver, on sorted value hashes (Alg. 7)
kept       the kept inputs (``state/ind_columns``) read and written without Spark
sized      signatures sized to their column (m doubled with the column's size), beyond Many's one m

All but ``columns`` and ``discover`` run without Spark. Many in memory (Alg. 1) with the merge-based
IND-Validator (Alg. 7), which the unit tests run the kernels through, is in ``lakemeta.reference.many`` and
``lakemeta.reference.ind_validator`` (over ``lakemeta.reference.value_store``).
"""

from lakemeta.inds.bloom import BloomParams
from lakemeta.inds.config import ManyConfig
from lakemeta.inds.filters import ColumnStats, FilterConfig

__all__ = ["BloomParams", "ColumnStats", "FilterConfig", "ManyConfig"]
