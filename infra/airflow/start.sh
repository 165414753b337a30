#!/usr/bin/env bash
# Start Airflow for local use: scheduler, dag-processor, api-server (http://127.0.0.1:8080) and
# triggerer, with the project's DAGs. Sign in as `admin`; the password is generated on first start into
# $AIRFLOW_HOME/simple_auth_manager_passwords.json.generated.
# LAKEMETA_LAKE and LAKEMETA_CATALOG (or LAKEMETA_CONFIG) tell the DAGs which lake to process.
set -euo pipefail
source "$(dirname "$0")/env.sh"
airflow db migrate
echo "Airflow UI: http://${AIRFLOW__API__HOST}:${AIRFLOW__API__PORT} (user admin, password in" \
     "$AIRFLOW_HOME/simple_auth_manager_passwords.json.generated)"
exec airflow standalone
