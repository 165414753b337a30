"""What the DAG files are built from when Airflow parses them: environment variables, nothing else.

Parsing a DAG file builds the DAG and does no more: it reads no lakemeta configuration (the tasks call
``load_config`` when they run), looks up no jar and starts no JVM, so the dag-processor needs neither
Java nor the configuration file, and a mistake in that file fails the task that reads it instead of
the parse of every DAG. Airflow parses the files in the dag-processor and again in each task's process:
set these variables in the environment of every Airflow component (``infra/airflow/env.sh``,
``infra/production/airflow.env``).

- ``LAKEMETA_INCREMENTAL_SCHEDULE``: lakemeta_incremental's schedule, a cron expression or preset
  (default ``@hourly``).

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
from airflow.sdk import Asset, Param

from lakemeta.config import Config

# Assets name what happened, not where the catalog lives: the location is the tasks' configuration,
# unknown when the DAGs are parsed, and one Airflow deployment serves one catalog.
# The committed state: lakemeta_incremental's commit produces it, lakemeta_discovery runs on it.
STATE_ASSET = Asset(name="lakemeta_state", uri="lakemeta://catalog/state")

# Steps are idempotent, so retries are safe; backing off rides out a busy cluster, a locked table or a
# Connect server that is restarting.
RETRIES = {
    "retries": 3,
    "retry_delay": timedelta(seconds=30),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=10),
}


def dag_arguments() -> dict[str, Any]:
    """The arguments every lakemeta DAG is built with: start date, retries."""
    return {
        "start_date": pendulum.datetime(2026, 1, 1, tz="UTC"),
        "catchup": False,
        "tags": ["lakemeta"],
        "default_args": RETRIES,
    }


def incremental_schedule() -> str:
    """lakemeta_incremental's schedule: ``LAKEMETA_INCREMENTAL_SCHEDULE``, hourly by default."""
    return os.environ.get("LAKEMETA_INCREMENTAL_SCHEDULE", "").strip() or "@hourly"


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


def settings_arguments(settings: Mapping[str, str]) -> list[str]:
    """``--set setting=value`` for each param (name -> configuration value it sets); a param left empty
    renders ``null``, which leaves the configured value in force (``lakemeta.config.load_config``)."""
    return [
        argument
        for param, setting in settings.items()
        for argument in ("--set", f"{setting}={{{{ params.{param} | tojson }}}}")
    ]
