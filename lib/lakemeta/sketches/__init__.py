"""Sketches: deletable HLL counters (BML §4) and the BML inclusion estimator (BML §3), fed the XXH64 hashes
of ``lakemeta.hashing``.

Modules: ``hll`` (counter state, deltas, registers, folding, cardinality, serialisation) and ``bml``
(Alg. 1-2, Eqs. 6-12, Theorem 4), Spark-free; ``state`` (the state component ``hll_counters``: the counters
as Delta state, maintained with Spark, and the distinct-count estimates derived from them); ``discover``
(the discovery step ``inclusion_estimates``). The bottom-k baseline (Zhang et al. §2, App. C) and the
in-memory merge of counters are in :mod:`lakemeta.reference`.
"""
