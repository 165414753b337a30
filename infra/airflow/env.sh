# Source this file: the Airflow environment for local use of the project's DAGs.
# SQLite metadata database under .airflow/ (AIRFLOW_HOME may point elsewhere), examples off, services
# bound to 127.0.0.1, and the `lakemeta_connect` connection to the Spark Connect server that start.sh runs
# on 127.0.0.1:$LAKEMETA_CONNECT_PORT (15002), unless it is set already. The server and its clients share
# a token (SPARK_CONNECT_AUTHENTICATE_TOKEN), generated once into $AIRFLOW_HOME/connect-token (mode 600).
# The DAGs' own settings (schedule, timeouts, notifications) are environment variables too, read when the
# DAG files are parsed: lakemeta.orchestration.dag_settings and docs/operations.md list them.
lakemeta_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export AIRFLOW_HOME=${AIRFLOW_HOME:-$lakemeta_root/.airflow}
export AIRFLOW__CORE__DAGS_FOLDER=$lakemeta_root/dags
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION=True
export AIRFLOW__API__HOST=127.0.0.1
export AIRFLOW__API__PORT=${AIRFLOW__API__PORT:-8080}
export AIRFLOW__CORE__EXECUTION_API_SERVER_URL=${AIRFLOW__CORE__EXECUTION_API_SERVER_URL:-http://127.0.0.1:${AIRFLOW__API__PORT}/execution/}
export AIRFLOW__EXECUTION_API__JWT_EXPIRATION_TIME=${AIRFLOW__EXECUTION_API__JWT_EXPIRATION_TIME:-3600}
export LAKEMETA_CONNECT_PORT=${LAKEMETA_CONNECT_PORT:-15002}
# Slots of the pool `lakemeta_spark` that start.sh creates: the steps the Connect server runs at once.
export LAKEMETA_SPARK_POOL_SLOTS=${LAKEMETA_SPARK_POOL_SLOTS:-4}
# pyspark sends a token only over a secure channel and counts the host name `localhost` as one (gRPC's
# local credentials): the connection names localhost, the server binds 127.0.0.1.
export AIRFLOW_CONN_LAKEMETA_CONNECT=${AIRFLOW_CONN_LAKEMETA_CONNECT:-'{"conn_type": "spark_connect", "host": "localhost", "port": '"$LAKEMETA_CONNECT_PORT"'}'}
if [ -z "${SPARK_CONNECT_AUTHENTICATE_TOKEN:-}" ]; then
    if [ ! -s "$AIRFLOW_HOME/connect-token" ]; then
        mkdir -p "$AIRFLOW_HOME"
        (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$AIRFLOW_HOME/connect-token")
    fi
    SPARK_CONNECT_AUTHENTICATE_TOKEN=$(cat "$AIRFLOW_HOME/connect-token")
    export SPARK_CONNECT_AUTHENTICATE_TOKEN
fi
export PATH=$lakemeta_root/.venv/bin:$PATH
