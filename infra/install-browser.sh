#!/usr/bin/env bash
# Debian's Chromium and its driver for the UI test (tests/dags/test_airflow_running.py), installed once; the test drives
# /usr/bin/chromium through /usr/bin/chromedriver and never downloads a browser of its own.
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium chromium-driver
