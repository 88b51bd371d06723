# HITL Portal — `make run` to try it, `make test` to test it.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
HOST ?= 127.0.0.1
PORT ?= 8000
WORKERS ?= 2
# The production server (README: Deploying): gunicorn supervising uvicorn workers (ASGI, edge/server.py:
# with a header timeout), one per core. A waiting engine costs a socket: give each process the hard
# limit of open files. The tests start the server with this very command (tests/asgi.py).
SERVE = ulimit -n "$$(ulimit -Hn)"; exec $(VENV)/bin/gunicorn hitl_portal.asgi:application --bind $(HOST):$(PORT) \
	--worker-class edge.server.Worker --workers $(WORKERS) --timeout 60 --keep-alive 30 --access-logfile -

.PHONY: run serve test lint format bench faults clean

$(VENV)/.installed: requirements.txt requirements-test.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --disable-pip-version-check -r requirements-test.txt
	touch $@

## make run: install, migrate, load the demo workspace, start web server + django-q2 worker + a demo webhook receiver
# The demo's contacts name these variables: a loopback receiver (logs each signed delivery) and
# the reviewer's address, mailed through the console backend (printed below).
run: export HITL_BASE_URL ?= http://$(HOST):$(PORT)
run: export HITL_DEMO_WEBHOOK ?= http://127.0.0.1:8009/hook
run: export HITL_DEMO_WEBHOOK_SECRET ?= whsec_ZGVtby1zaWduaW5nLXNlY3JldC1ub3QtZm9yLXByb2R1Y3Rpb24=
run: export HITL_DEMO_REVIEWER_EMAIL ?= reviewer@acme.test
run: export EMAIL_BACKEND ?= django.core.mail.backends.console.EmailBackend
run: $(VENV)/.installed
	$(PY) manage.py migrate --noinput --verbosity 0
	$(PY) manage.py collectstatic --noinput --verbosity 0
	$(PY) manage.py hitl demo --url http://$(HOST):$(PORT)/
	@# Ctrl-C stops them all and returns. The trap clears itself first (a bare `kill 0` re-entered it
	@# until the shell crashed); notes every process under the children (server, cluster, demo webhook
	@# receiver) — the cluster's workers are its grandchildren; signals the children; gives the whole
	@# tree 10 s to stop (the cluster has hung mid-shutdown); then kills what is left of it and whatever
	@# the children started meanwhile. The children's pids are kept from $$! as each starts: sh (dash)
	@# answers `$$(jobs -p)` with nothing, and a hung cluster then held make run open for good.
	@tree() { for c in $$(pgrep -P $$1); do tree $$c; done; echo $$1; }; \
	  trap 'trap - INT TERM EXIT; all=$$(for p in $$pids; do tree $$p; done); kill $$pids 2>/dev/null; \
	  for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do \
	    alive=; for p in $$all; do kill -0 $$p 2>/dev/null && alive=1; done; [ -z "$$alive" ] && break; sleep 0.5; \
	  done; kill -9 $$all $$(for p in $$pids; do tree $$p; done) 2>/dev/null; wait' INT TERM EXIT; \
	  $(PY) -m hitl_portal.demo_receiver --port 8009 & pids=$$!; \
	  $(PY) manage.py qcluster & pids="$$pids $$!"; \
	  ( $(SERVE) ) & pids="$$pids $$!"; \
	  wait

## make serve: the web server alone, as deployed (HOST, PORT, WORKERS from the environment); DATABASE_URL as set
serve: $(VENV)/.installed
	$(SERVE)

## make test: the whole suite on PostgreSQL — DATABASE_URL's (CI), or else a throwaway one from the
## pip-installed pgserver wheel, started for this run and deleted after it (tests/throwaway_postgres.py)
# pytest-xdist workers, each with its own test database (TEST_WORKERS=0 runs in one process).
# Plain --dist load: schemathesis gives its 32 operations one node id, and the loadgroup/loadscope/
# loadfile schedulers key tests by node id — they would run one operation and drop 31 silently.
TEST_WORKERS ?= 4
ON_POSTGRES = $(if $(DATABASE_URL),,$(PY) -m tests.throwaway_postgres)
test: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(ON_POSTGRES) $(VENV)/bin/pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(VENV)/.installed
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf $(VENV) staticfiles .pytest_cache db.sqlite3

## make faults: fault tests on PostgreSQL (kills the django-q2 cluster and database connections on purpose)
faults: $(VENV)/.installed
	$(ON_POSTGRES) $(VENV)/bin/pytest -m faults tests/faults $(PYTEST_ARGS)

## make bench: by hand, never in `make test` — throwaway PostgreSQL database, gunicorn, figures beside floors
BENCH_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/hitl_bench
bench: $(VENV)/.installed
	BENCH_DATABASE_URL=$(BENCH_DATABASE_URL) $(PY) -m bench $(BENCH_ARGS)
