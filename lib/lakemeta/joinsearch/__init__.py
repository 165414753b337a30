"""n-ary joinable-table search after MATE (Esmailoghli et al., VLDB 2022), free of Spark.

Modules: ``normalise`` (cell values, same on both sides), ``xash`` (the XASH hash, §5.3), ``bloom_key``
(Bloom super keys, the §7.1.2 baseline), ``superkey`` (row super keys and the row filter, §5.1, §6.3),
``index`` (posting-list items and the columnar index, §3), ``search`` (Algorithm 1 and the SCR baseline).
"""
