# The two commands to start with: `make demo` and `make test` (each runs set-up first when needed).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SETUP_DONE := $(VENV)/.setup-done

.PHONY: setup demo test test-fast lint airflow clean

setup: $(SETUP_DONE)

# One-time set-up: the venv with every pinned package and lakemeta itself, then Delta's jars from
# Maven Central into .cache/jars. Nothing after this needs the network.
$(SETUP_DONE): requirements.txt setup.cfg pyproject.toml infra/jvm/pom.xml infra/jvm/s3/pom.xml infra/fetch-jars.sh
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps -e .
	bash infra/fetch-jars.sh $(BIN)/python
	touch $@

demo: setup
	$(BIN)/lakemeta demo

test: setup
	bash infra/install-browser.sh
	bash infra/install-s3-server.sh
	bash infra/run-tests.sh

lint: setup
	$(BIN)/ruff check lib jobs dags tests bench

airflow: setup
	bash infra/airflow/start.sh

clean:
	rm -rf $(VENV) .cache .airflow demo-output test-output
