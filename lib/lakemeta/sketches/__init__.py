"""Sketches, Spark-free: deletable HLL counters (BML §4), the BML inclusion estimator (BML §3) and the
bottom-k baseline (Zhang et al. §2, App. C), all fed the XXH64 hashes of ``lakemeta.hashing``.

Modules: ``hll`` (counter state, deltas, merge, registers, folding, cardinality, serialisation), ``bml``
(Alg. 1-2, Eqs. 6-12, Theorem 4), ``bottomk``.
"""
