#!/usr/bin/env bash
# Start Airflow for local use: scheduler, dag-processor and api-server (http://127.0.0.1:8080), with the
# project's DAGs, sign-in required, and the Spark Connect server their Spark tasks run
# on (127.0.0.1:15002, token in $AIRFLOW_HOME/connect-token), restarted whenever it stops, as systemd's
# lakemeta-connect.service is, and warmed up once started (LAKEMETA_WARM_UP=0 skips that); Airflow's retries
# carry a task over a restart. Sign in as `admin`; the password is generated on
# first start into $AIRFLOW_HOME/simple_auth_manager_passwords.json.generated.
# LAKEMETA_LAKE and LAKEMETA_CATALOG (or LAKEMETA_CONFIG) tell the DAGs which lake to process. Every Spark
# task runs in the pool `lakemeta_spark`, (re)created here with LAKEMETA_SPARK_POOL_SLOTS slots (4).
#
# The components start one by one rather than through `airflow standalone`, whose scheduler and
# triggerer serve task logs on every interface; here nothing listens beyond 127.0.0.1 (the api-server
# reads task logs from the local log folder instead). No triggerer: no lakemeta task defers, and the
# discovery DAG's asset schedule is the scheduler's work.
set -euo pipefail
source "$(dirname "$0")/env.sh"
airflow db migrate
# Before the scheduler starts: it never queues a task of a pool that does not exist.
airflow pools set lakemeta_spark "$LAKEMETA_SPARK_POOL_SLOTS" "lakemeta: steps on the Spark Connect server"
trap 'kill $(jobs -p) 2>/dev/null' EXIT INT TERM
(
    trap 'kill $server 2>/dev/null; exit 0' TERM INT
    while true; do
        lakemeta connect-server --port "$LAKEMETA_CONNECT_PORT" &
        server=$!
        if [ "${LAKEMETA_WARM_UP:-1}" = 1 ]; then  # the first task then finds the server warm
            lakemeta --remote "sc://localhost:$LAKEMETA_CONNECT_PORT" warm-up \
                >>"$AIRFLOW_HOME/connect-warm-up.log" 2>&1 &
        fi
        status=0
        wait $server || status=$?
        [ "$status" -eq 2 ] && exit 2  # a usage or configuration error: restarting would not help
        echo "Spark Connect server stopped ($status), restarting" >&2
        sleep 2
    done
) &
airflow scheduler --skip-serve-logs &
airflow dag-processor &
airflow api-server --host "$AIRFLOW__API__HOST" --port "$AIRFLOW__API__PORT" &
echo "Airflow UI: http://${AIRFLOW__API__HOST}:${AIRFLOW__API__PORT} (user admin, password in" \
     "$AIRFLOW_HOME/simple_auth_manager_passwords.json.generated)"
wait -n  # one component stopping stops them all
