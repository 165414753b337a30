#!/usr/bin/env bash
# The Debian packages tests need, installed once in one apt-get call: Chromium and its driver for the UI
# test (tests/dags/test_airflow_running.py drives /usr/bin/chromium through /usr/bin/chromedriver and never
# downloads a browser of its own), and PostgreSQL for the deployment test (tests/dags/test_deployment.py
# runs a cluster of its own with Debian's binaries under /usr/lib/postgresql/VERSION/bin).
set -euo pipefail
missing=()
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    missing+=(chromium chromium-driver)
fi
if ! compgen -G "/usr/lib/postgresql/*/bin/postgres" > /dev/null; then
    missing+=(postgresql)
fi
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
