"""lakemeta_joinable_search: triggered by hand, the top-k lake tables joinable with a query table (MATE §6).

Wiring only: one task running the step `joinable_search` on the Spark Connect server. The trigger form
validates the params: the query (a lake table's name, or a CSV / Parquet file inside the lake, as a path
relative to the lake root), its key columns, k and the super-key size (it must be the size the posting
lists were built with). The ranked tables go to the catalog table `joinable_tables` under the DAG run's
id and into the task's log.
"""

from __future__ import annotations

from airflow.sdk import Param, dag

from lakemeta.orchestration.dag_settings import configured_param, dag_arguments, param_settings
from lakemeta.orchestration.spark_tasks import spark_step

# Param name -> the configuration value it sets.
SETTINGS = {"k": "joinsearch.k", "hash_bits": "joinsearch.hash_bits"}


@dag(
    dag_id="lakemeta_joinable_search",
    schedule=None,
    doc_md=__doc__,
    params={
        "query": Param(
            type="string",
            minLength=1,
            # relative to the lake root and never above it (the job checks the resolved path again)
            pattern=r"^(?!/)(?!(.*/)?\.\.(/|$)).+$",
            title="Query table",
            description="A lake table's name (e.g. shop/orders) or a CSV / Parquet file inside the lake, "
            "relative to the lake root.",
        ),
        "key_columns": Param(
            type="array",
            # the job receives them comma-separated (Delta refuses commas in column names anyway)
            items={"type": "string", "minLength": 1, "pattern": "^[^,]+$"},
            minItems=1,
            uniqueItems=True,
            title="Key columns",
            description="The query's key columns, one per line.",
        ),
        "k": configured_param(
            "joinsearch.k",
            type="integer",
            minimum=1,
            maximum=1000,
            title="k",
            description="Tables to return.",
        ),
        "hash_bits": configured_param(
            "joinsearch.hash_bits",
            type="integer",
            enum=[128, 256, 512],
            title="Super-key size (bits)",
            description="Must be the size the posting lists were built with (joinsearch.hash_bits).",
        ),
    },
    **dag_arguments(analysts_trigger=True),
)
def lakemeta_joinable_search() -> None:
    spark_step(
        "joinable_search",
        "joinable_search",
        param_settings(SETTINGS),
        query="{{ params.query }}",
        key="{{ params.key_columns | join(',') }}",
        query_id="{{ run_id }}",
    )


lakemeta_joinable_search()
