"""What the DAG files are built from when Airflow parses them: environment variables, nothing else.

Parsing a DAG file builds the DAG and does no more: it reads no lakemeta configuration (the tasks call
``load_config`` when they run), looks up no jar and starts no JVM, so the dag-processor needs neither
Java nor the configuration file, and a mistake in that file fails the task that reads it instead of
the parse of every DAG. Airflow parses the files in the dag-processor and again in each task's process:
set these variables in the environment of every Airflow component (``infra/airflow/env.sh``,
``infra/production/airflow.env``).

- ``LAKEMETA_INCREMENTAL_SCHEDULE``: lakemeta_incremental's schedule, a cron expression or preset
  (default ``@hourly``).
- ``LAKEMETA_MAINTENANCE_SCHEDULE``: lakemeta_maintenance's schedule (default ``@daily``).
- ``LAKEMETA_TASK_TIMEOUT_MINUTES``: every task's ``execution_timeout`` (default 120): an attempt running
  longer fails, and is retried like any failure.
- ``LAKEMETA_DAG_RUN_TIMEOUT_MINUTES``: every DAG's ``dagrun_timeout`` (default 720): a run going longer
  fails, which frees ``max_active_runs`` for the next one.
- ``LAKEMETA_NOTIFY_EMAIL``: comma-separated addresses told of every failed DAG run (unset: no
  notifications), by the SMTP provider's notifier through the connection Airflow's
  ``[email] email_conn_id`` names (``smtp_default``).

A DAG param that sets a configuration value has no default of its own (``configured_param``): left
empty, the task's configuration decides, so a value in the configuration file holds for scheduled and
triggered runs alike.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import pendulum
from airflow.providers.smtp.notifications.smtp import SmtpNotifier
from airflow.sdk import Asset, Param

from lakemeta.config import Config

# The pool of every task that runs a step on the Spark Connect server: its slots cap the steps the
# server runs at once, whichever DAGs they belong to. infra/airflow/start.sh creates it (`airflow pools
# set`, LAKEMETA_SPARK_POOL_SLOTS); a production deployment creates it once (infra/production/README.md).
SPARK_POOL = "lakemeta_spark"

# Assets name what happened, not where the catalog lives: the location is the tasks' configuration,
# unknown when the DAGs are parsed, and one Airflow deployment serves one catalog.
# The committed state: lakemeta_incremental's commit produces it, lakemeta_discovery runs on it.
STATE_ASSET = Asset(name="lakemeta_state", uri="lakemeta://catalog/state")
# The audited catalog, published to the Spark SQL database `lakemeta`: the publish task of
# lakemeta_discovery and lakemeta_rebuild produces it; users' DAGs schedule on it.
PUBLISHED_ASSET = Asset(name="lakemeta_catalog_published", uri="lakemeta://catalog/published")

# The DAG callback's context holds the DAG, the run's id and the reason (a failed task, a timeout);
# the notifier's default templates describe a task instance, which a timed-out run may lack.
FAILURE_SUBJECT = "lakemeta: {{ dag.dag_id }} run {{ run_id }} failed"
FAILURE_BODY = "<p>{{ dag.dag_id }} run {{ run_id }} failed: {{ reason }}</p>"


def _duration(variable: str, default: int, unit: str) -> timedelta:
    """``variable``'s value, a positive whole number of ``unit`` ("minutes", "seconds"), or ``default``."""
    text = os.environ.get(variable, "").strip()
    if not text:
        return timedelta(**{unit: default})
    if not text.isdigit() or int(text) == 0:
        raise ValueError(f"{variable} must be a positive number of {unit}, got {text!r}")
    return timedelta(**{unit: int(text)})


def retries() -> dict[str, Any]:
    """Every task's retries: three, the first after ``LAKEMETA_RETRY_DELAY_SECONDS`` (30), each next one
    after about twice as long as the one before, at most ten minutes. Steps are idempotent, so retries are
    safe; backing off rides out a busy cluster, a locked table or a Connect server that is restarting."""
    return {
        "retries": 3,
        "retry_delay": _duration("LAKEMETA_RETRY_DELAY_SECONDS", 30, "seconds"),
        "retry_exponential_backoff": True,
        "max_retry_delay": timedelta(minutes=10),
    }


def failure_notifiers() -> list[SmtpNotifier]:
    """The notifiers of a failed DAG run: one e-mail to ``LAKEMETA_NOTIFY_EMAIL``'s addresses, or none."""
    recipients = [address.strip() for address in os.environ.get("LAKEMETA_NOTIFY_EMAIL", "").split(",")]
    recipients = [address for address in recipients if address]
    if not recipients:
        return []
    return [SmtpNotifier(to=recipients, subject=FAILURE_SUBJECT, html_content=FAILURE_BODY)]


OPERATOR_ROLE, ANALYST_ROLE = "lakemeta_operator", "lakemeta_analyst"
"""The roles the DAGs grant runs to under the FAB auth manager (infra/production/README.md, "Roles"): an
operator triggers, clears and pauses every lakemeta DAG; an analyst, beside Airflow's ``Viewer``, triggers
the joinable-table search alone."""


def access_control(analysts_trigger: bool = False) -> dict[str, dict[str, set[str]]]:
    """A DAG's permissions by role (the FAB auth manager's ``access_control``; other auth managers ignore
    it). Airflow's own roles keep theirs: ``User`` and ``Op`` may trigger any DAG, ``lakemeta_rebuild``
    included, so analysts get ``Viewer`` and ``lakemeta_analyst``, never ``User``."""
    runs = {"can_read", "can_create", "can_delete"}
    control = {OPERATOR_ROLE: {"DAGs": {"can_read", "can_edit"}, "DAG Runs": runs}}
    if analysts_trigger:
        # the FAB auth manager lets a role create a DAG's runs where it may also edit the DAG (pause it)
        control[ANALYST_ROLE] = {"DAGs": {"can_read", "can_edit"}, "DAG Runs": {"can_read", "can_create"}}
    return control


def dag_arguments(analysts_trigger: bool = False) -> dict[str, Any]:
    """The arguments every lakemeta DAG is built with: start date, retries, timeouts, notifications, and
    who may run it (``access_control``: the operators, and the analysts where ``analysts_trigger``)."""
    return {
        "access_control": access_control(analysts_trigger),
        "start_date": pendulum.datetime(2026, 1, 1, tz="UTC"),
        "catchup": False,
        "tags": ["lakemeta"],
        "default_args": {
            **retries(),
            "execution_timeout": _duration("LAKEMETA_TASK_TIMEOUT_MINUTES", 120, "minutes"),
        },
        "dagrun_timeout": _duration("LAKEMETA_DAG_RUN_TIMEOUT_MINUTES", 720, "minutes"),
        "on_failure_callback": failure_notifiers(),
    }


def incremental_schedule() -> str:
    """lakemeta_incremental's schedule: ``LAKEMETA_INCREMENTAL_SCHEDULE``, hourly by default."""
    return os.environ.get("LAKEMETA_INCREMENTAL_SCHEDULE", "").strip() or "@hourly"


def maintenance_schedule() -> str:
    """lakemeta_maintenance's schedule: ``LAKEMETA_MAINTENANCE_SCHEDULE``, daily by default."""
    return os.environ.get("LAKEMETA_MAINTENANCE_SCHEDULE", "").strip() or "@daily"


def configured_param(setting: str, *, type: str, description: str, **schema: Any) -> Param:
    """A param that overrides the configuration value ``setting`` (``section.key``) when given, and
    leaves it to the configuration when empty (null); ``schema`` is the rest of its JSON schema."""
    section, _, key = setting.partition(".")
    built_in = getattr(getattr(Config(), section), key)  # the dataclass default, not the file's
    if "enum" in schema:
        schema["enum"] = [None, *schema["enum"]]
    return Param(
        None,
        type=["null", type],
        description=f"{description} Empty: the configured {setting} (built in: {built_in}).",
        **schema,
    )


def param_settings(settings: Mapping[str, str]) -> list[str]:
    """A step's settings (``SECTION.KEY=VALUE``, as ``--set`` takes them) from the DAG run's params (name
    -> the configuration value it sets); a param left empty renders ``null``, which leaves the configured
    value in force (``lakemeta.config.load_config``)."""
    return [f"{setting}={{{{ params.{param} | tojson }}}}" for param, setting in settings.items()]
