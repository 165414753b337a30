# Source this file: the Airflow environment for local use of the project's DAGs.
# SQLite metadata database under .airflow/ (AIRFLOW_HOME may point elsewhere), examples off, services
# bound to 127.0.0.1, and the `spark_default` connection on local[*] unless it is set already.
lakemeta_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export AIRFLOW_HOME=${AIRFLOW_HOME:-$lakemeta_root/.airflow}
export AIRFLOW__CORE__DAGS_FOLDER=$lakemeta_root/dags
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION=True
export AIRFLOW__API__HOST=127.0.0.1
export AIRFLOW__API__PORT=${AIRFLOW__API__PORT:-8080}
export AIRFLOW__CORE__EXECUTION_API_SERVER_URL=${AIRFLOW__CORE__EXECUTION_API_SERVER_URL:-http://127.0.0.1:${AIRFLOW__API__PORT}/execution/}
export AIRFLOW__EXECUTION_API__JWT_EXPIRATION_TIME=${AIRFLOW__EXECUTION_API__JWT_EXPIRATION_TIME:-3600}
export AIRFLOW_CONN_SPARK_DEFAULT=${AIRFLOW_CONN_SPARK_DEFAULT:-'{"conn_type": "spark", "host": "local[*]"}'}
export PATH=$lakemeta_root/.venv/bin:$PATH
