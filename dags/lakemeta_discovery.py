"""lakemeta_discovery: the discovery results from the committed state, each time lakemeta_incremental
commits (the asset `lakemeta_state`), or triggered by hand with other thresholds.

Wiring only: the discovery steps of the registry (`lakemeta.registry.DISCOVERY_STEPS`), each after the
steps whose results it reads: keys and FDs from the agree-sets, BML inclusion estimates, Many's INDs,
then the FK candidates (whose phase 1 reads the estimates and whose keys come from the agree-sets); then
the quality gate audits the catalog as written (Great Expectations; the results' path is in its log),
and only when it passes are the audited versions published to the Spark SQL database `lakemeta`. Each
param is handed to every discovery step as a configuration setting (`section.key=value`); a param
left empty leaves the configured value in force (the task reads the configuration, the parse does not).
"""

from __future__ import annotations

from airflow.sdk import dag

from lakemeta.orchestration.dag_settings import (
    STATE_ASSET,
    configured_param,
    dag_arguments,
    param_settings,
)
from lakemeta.orchestration.spark_tasks import publish_step, quality_gate_step, spark_step
from lakemeta.registry import DISCOVERY_STEPS

# Param name -> the configuration value it sets.
SETTINGS = {
    "inclusion_floor": "sketches.inclusion_floor",
    "exact_max_distinct": "sketches.exact_max_distinct",
    "max_error_bound": "sketches.max_error_bound",
    "max_fd_error": "agree_sets.max_fd_error",
    "ind_filters": "inds.filters",
    "fk_inclusion_threshold": "fks.inclusion_threshold",
    "require_name_match": "fks.require_name_match",
    "fk_name_signal": "fks.name_signal",
    "fk_min_score": "fks.min_score",
    "fk_prefix_share": "fks.prefix_share",
    "fk_overlap_share": "fks.overlap_share",
}


@dag(
    dag_id="lakemeta_discovery",
    schedule=[STATE_ASSET],
    max_active_runs=1,
    doc_md=__doc__,
    params={
        "inclusion_floor": configured_param(
            "sketches.inclusion_floor",
            type="number",
            minimum=0,
            maximum=1,
            title="Inclusion-estimate floor",
            description="inclusion_estimates keeps the column pairs whose inclusion reaches this.",
        ),
        "exact_max_distinct": configured_param(
            "sketches.exact_max_distinct",
            type="integer",
            minimum=0,
            title="Exact inclusion up to this many values",
            description="A dependent column with at most this many distinct values gets its inclusion "
            "counted exactly from the value sets instead of estimated (0: estimates only).",
        ),
        "max_error_bound": configured_param(
            "sketches.max_error_bound",
            type="number",
            minimum=0,
            maximum=1,
            title="Widest error bound reported",
            description="An estimate whose error bound is wider is reported as undetermined, without it.",
        ),
        "max_fd_error": configured_param(
            "agree_sets.max_fd_error",
            type="number",
            minimum=0,
            maximum=1,
            title="Largest FD error",
            description="Approximate FDs up to this error (g3, DynASt Def. 6.2); 0 keeps exact FDs only.",
        ),
        "ind_filters": configured_param(
            "inds.filters",
            type="string",
            enum=["relational", "web", "none"],
            title="Many's filters",
            description="relational: null columns only; web: all four of Many §3.2; none.",
        ),
        "fk_inclusion_threshold": configured_param(
            "fks.inclusion_threshold",
            type="number",
            exclusiveMinimum=0,
            maximum=1,
            title="FK inclusion threshold θ",
            description="Zhang et al. use 0.9; BML §5.3 prunes below 0.95 for exact containment.",
        ),
        "require_name_match": configured_param(
            "fks.require_name_match",
            type="boolean",
            title="Require matching column names",
            description="Accept only FK candidates whose column names match the key's (Zhang §5.4).",
        ),
        "fk_name_signal": configured_param(
            "fks.name_signal",
            type="boolean",
            title="Column names as an FK signal",
            description="Prefer keys whose names the dependent's name matches (never required).",
        ),
        "fk_min_score": configured_param(
            "fks.min_score",
            type="number",
            minimum=0,
            maximum=1,
            title="FK score to accept",
            description="A dependent's best key is accepted as its FK from this learned score on.",
        ),
        "fk_prefix_share": configured_param(
            "fks.prefix_share",
            type="number",
            minimum=0,
            maximum=1,
            title="Counting-column share",
            description="Values in an integer key's first tenth ending before this share count, not refer.",
        ),
        "fk_overlap_share": configured_param(
            "fks.overlap_share",
            type="number",
            minimum=0,
            maximum=1,
            title="Overlap share",
            description="Tables whose columns are included one-to-one in another's at this share overlap.",
        ),
    },
    **dag_arguments(),
)
def lakemeta_discovery() -> None:
    settings = param_settings(SETTINGS)
    steps = {s.name: spark_step(s.name, "discover", settings, step=s.name) for s in DISCOVERY_STEPS}
    for step in DISCOVERY_STEPS:
        [steps[before] for before in step.after] >> steps[step.name]  # e.g. the FK search reads the keys
    read_by_others = {name for step in DISCOVERY_STEPS for name in step.after}
    gate = quality_gate_step()
    publish = publish_step()
    last = [steps[name] for name in steps if name not in read_by_others]
    last >> gate >> publish  # write, audit, publish


lakemeta_discovery()
