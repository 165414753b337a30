# The two commands to start with: `make demo` and `make test` (each runs set-up first when needed).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SETUP_DONE := $(VENV)/.setup-done

.PHONY: setup demo test test-fast test-packages s3-server lint lock airflow clean

setup: $(SETUP_DONE)

# One-time set-up (infra/setup.sh): the venv with every pinned package and lakemeta itself, then Delta's
# jars from Maven Central into .cache/jars. Nothing after this needs the network.
$(SETUP_DONE): requirements.txt pyproject.toml infra/jvm/pom.xml infra/jvm/s3/pom.xml infra/fetch-jars.sh infra/setup.sh
	bash infra/setup.sh $(PYTHON)
	touch $@

demo: setup
	$(BIN)/lakemeta demo

# The venv, the Debian packages and the S3 server are set up side by side: uv, Maven and apt wait on downloads while
# the S3 server's Go build uses the cores.
test:
	$(MAKE) --no-print-directory -j3 setup test-packages s3-server
	bash infra/run-tests.sh

# The tests that need no JVM and no Airflow: a minute, for the edit-test loop.
test-fast: setup
	NUMBA_CACHE_DIR=$${NUMBA_CACHE_DIR:-$$PWD/.cache/numba} $(BIN)/python -m pytest -q -m "not spark and not airflow"

test-packages:
	bash infra/install-test-packages.sh

s3-server:
	bash infra/install-s3-server.sh

lint: setup
	$(BIN)/ruff check lib jobs dags tests bench

# After a change to pyproject.toml's dependencies (or to upgrade: `.venv/bin/uv lock --upgrade-package X`):
# uv.lock resolved again, and the requirement sets exported from it (infra/export-requirements.sh).
lock: setup
	$(BIN)/uv lock
	bash infra/export-requirements.sh

airflow: setup
	bash infra/airflow/start.sh

clean:
	rm -rf $(VENV) .cache .airflow demo-output test-output
