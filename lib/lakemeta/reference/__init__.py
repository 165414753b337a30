"""Reference implementations and baselines: nothing on a production path imports this package.

* References are the papers' algorithms written plainly, in memory: the tests compare the production code
  (Spark adapters, incremental state, kernels) with them.
* Baselines are the alternatives the benchmarks under ``bench/`` measure the production code against.
* ``s3_server`` starts the S3-compatible server the tests and benchmarks run object storage on.
"""
