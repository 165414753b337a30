"""The orchestration wing: what runs the pipeline's steps from a scheduler (the Airflow tasks of the DAG
files, ``dag_tasks``), above every layer it calls."""
