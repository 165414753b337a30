"""The scheduler's side of lakemeta: the steps as one typed table (``steps``), the pipeline they run
(``pipeline``), the Airflow tasks that run them (``spark_tasks``, ``python_tasks``) and what the DAG files
are built from (``dag_settings``), publication, maintenance, lineage and the server's warm-up. Above every
layer it calls; only the CLI and the demo stand on it."""
