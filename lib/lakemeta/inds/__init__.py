"""Unary inclusion dependencies with Many (Tschirschnitz, Papenbrock, Naumann, TODS 2017).

bloom      Bloom bit-signatures per column: m, k, p passes (§4.1, §4.3)
matrix     the bit-signature matrix (Alg. 3)
proposer   IND-Proposer: dep2refs / ref2deps, plain or indexed bit-vectors, ranges (Alg. 4-6, 8-9, §4.5)
values     distinct value sets per column for validation (values hashed by ``lakemeta.hashing``)
validator  IND-Validator: exact merge-based subset check (Alg. 7)
filters    null / integer / non-unique / coverage filters (§3.2, Alg. 10-11)
many       the whole pipeline (Alg. 1, 8-11)
graph      the IND graph of tables, components, HTML / PNG rendering (§6)
"""

from lakemeta.inds.bloom import BloomParams
from lakemeta.inds.filters import ColumnStats, FilterConfig
from lakemeta.inds.many import Inds, ManyConfig, discover
from lakemeta.inds.values import ValueStore

__all__ = ["BloomParams", "ColumnStats", "FilterConfig", "Inds", "ManyConfig", "ValueStore", "discover"]
