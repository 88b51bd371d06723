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
# `make serve` runs it from the virtualenv you are in (the README's deploy section installs into it),
# or else from .venv, which it makes; `make run` always from .venv.
SERVE_BIN = $(if $(VIRTUAL_ENV),$(VIRTUAL_ENV),$(VENV))/bin
SERVE = ulimit -n "$$(ulimit -Hn)"; exec $(SERVE_BIN)/gunicorn hitl_portal.asgi:application --bind $(HOST):$(PORT) \
	--worker-class edge.server.Worker --workers $(WORKERS) --timeout 60 --keep-alive 30 --access-logfile -
# The address make run prints and the demo's links use: localhost, where browsers allow passkeys
# (WebAuthn refuses an IP address), served on HOST.
RUN_URL = http://localhost:$(PORT)
# Installing: uv (one wheel from PyPI, or the one on PATH) installs what pip does in a fraction of the
# time; pip does it when uv cannot be had (offline, an index uv cannot read). Bytecode is compiled at
# install, as pip does: otherwise the first start compiles every module in each process at once.
INSTALL = { uv=$$(command -v uv || { $(PIP) install --quiet --disable-pip-version-check uv && echo $(VENV)/bin/uv; }) \
	&& "$$uv" pip install --quiet --compile-bytecode --python $(PY) -r $(1); } || $(PIP) install --quiet --disable-pip-version-check -r $(1)

.PHONY: run serve cluster test lint format bench faults clean

# Two stamps on one virtualenv: `make run` and `make serve` need what the portal imports
# (requirements.txt) and nothing more; `make test` adds the test toolchain on top.
$(VENV)/.runtime: requirements.txt clients/python/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(call INSTALL,requirements.txt)
	touch $@

$(VENV)/.installed: $(VENV)/.runtime requirements-test.txt
	$(call INSTALL,requirements-test.txt)
	touch $@

## make run: install the runtime, migrate, load the demo workspace, start web server + django-q2 worker +
## a demo webhook receiver. No DATABASE_URL: an embedded PostgreSQL (pgserver), its data kept in .data/postgres.
# The demo's contacts name these variables: the receiver make run starts (HITL_DEMO_WEBHOOK, on a free
# port or DEMO_WEBHOOK_PORT) and the reviewer's address, mailed through the console backend (printed below).
# launch/run.py starts and stops it all; Ctrl-C ends it with 0.
run: SERVE_BIN = $(VENV)/bin
run: export HITL_BASE_URL ?= $(RUN_URL)
run: export HITL_DEMO_WEBHOOK_SECRET ?= whsec_ZGVtby1zaWduaW5nLXNlY3JldC1ub3QtZm9yLXByb2R1Y3Rpb24=
run: export HITL_DEMO_REVIEWER_EMAIL ?= reviewer@acme.test
run: export EMAIL_BACKEND ?= django.core.mail.backends.console.EmailBackend
run: $(VENV)/.runtime
	@$(PY) -m launch.run --url $(RUN_URL)/ --serve '$(SERVE)'

## make cluster: a two-node deployment on this machine (docs/deploy.md) — nginx on PORT in front of two nodes
## (PORT+1, PORT+2), PgBouncer (6432) in front of DATABASE_URL's PostgreSQL, the django-q2 cluster. Ctrl-C stops it all.
cluster: $(VENV)/.runtime
	@$(PY) -m launch.two_nodes --port $(PORT) --nodes $$(($(PORT)+1)),$$(($(PORT)+2))

## make serve: the web server alone, as deployed (HOST, PORT, WORKERS from the environment); DATABASE_URL as set.
## From the active virtualenv (VIRTUAL_ENV) when there is one, else from .venv.
ifdef VIRTUAL_ENV
serve:
else
serve: $(VENV)/.runtime
endif
	$(SERVE)

## make test: the whole suite on PostgreSQL — DATABASE_URL's (CI), or else a throwaway one from the
## pip-installed pgserver wheel, started for this run and deleted after it (tests/throwaway_postgres.py)
# pytest-xdist workers, each with its own test database (TEST_WORKERS=0 runs in one process).
# Plain --dist load: schemathesis gives its 32 operations one node id, and the loadgroup/loadscope/
# loadfile schedulers key tests by node id — they would run one operation and drop 31 silently.
TEST_WORKERS ?= 4
# The TypeScript client's packages (tests/clients/test_typescript.py runs its Node tests): from the
# committed lockfile, again whenever the lockfile is newer than what npm ci last installed.
TS_CLIENT := clients/typescript
ON_POSTGRES = $(if $(DATABASE_URL),,$(PY) -m tests.throwaway_postgres)
test: $(VENV)/.installed $(TS_CLIENT)/node_modules/.package-lock.json
	$(VENV)/bin/ruff check .
	$(ON_POSTGRES) $(VENV)/bin/pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

$(TS_CLIENT)/node_modules/.package-lock.json: $(TS_CLIENT)/package-lock.json
	cd $(TS_CLIENT) && npm ci --no-audit --no-fund
	touch $@

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(VENV)/.installed
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf $(VENV) staticfiles .pytest_cache  # .data (make run's PostgreSQL) is kept: it is your data

## make faults: fault tests on PostgreSQL (kills the django-q2 cluster and database connections on purpose)
faults: $(VENV)/.installed
	$(ON_POSTGRES) $(VENV)/bin/pytest -m faults tests/faults $(PYTEST_ARGS)

## make bench: by hand, never in `make test` — throwaway PostgreSQL database, gunicorn, figures beside floors
BENCH_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/hitl_bench
bench: $(VENV)/.installed $(TS_CLIENT)/node_modules/.package-lock.json
	BENCH_DATABASE_URL=$(BENCH_DATABASE_URL) $(PY) -m bench $(BENCH_ARGS)
