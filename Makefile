# Tribunal: `make run` serves the app with demo data; `make test` runs every test suite.
# See README.md for what each target does and the environment variables they read.

VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST := $(VENV)/bin/pytest
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/tribunal
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15
# test-postgres runs beside test-integration, so it gets its own database and Redis database.
TEST_POSTGRES_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/tribunal_pg
TEST_POSTGRES_REDIS_URL ?= redis://127.0.0.1:6379/14
PYTEST_ARGS ?=

# pytest exits 5 when it collected nothing: a suite that silently lost its tests is a failure.
define pytest_run
	$(PYTEST) $(1) $(PYTEST_ARGS) || { rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "error: pytest collected no tests in $(1)"; fi; exit $$rc; }
endef

# The SQLite suites ignore any DATABASE_URL / broker from the caller's shell.
SQLITE_ENV := env -u DATABASE_URL -u CELERY_BROKER_URL
SERVICES_ENV := env DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_REDIS_URL) \
	TEST_DATABASE_URL=$(TEST_DATABASE_URL) TEST_REDIS_URL=$(TEST_REDIS_URL)

.PHONY: help run test test-unit test-integration test-browser test-postgres lint bench venv venv-dev chromium clean

help:
	@echo "make run            migrate, load demo + EVA sample, serve http://127.0.0.1:8000/ with a Celery worker"
	@echo "make test           unit + Django tests (SQLite), integration (PostgreSQL, Redis, Celery), browser (Chromium),"
	@echo "                   tests/reviewapp again on PostgreSQL: two suites at a time"
	@echo "make test-postgres  only the tests/reviewapp suite on PostgreSQL"
	@echo "make lint           ruff check, ruff format --check, mypy scoring"
	@echo "make bench          run every bench/*.py, or one: make bench BENCH=compare BENCH_ARGS=\"--size 100000\""

# --- environments -------------------------------------------------------------------------------
$(PY):
	@py="$$(scripts/find-python)" && echo "Creating $(VENV) with $$py" && "$$py" -m venv $(VENV)

# Stamp files: pip runs again only when a requirements file is newer than its stamp.
$(VENV)/.installed-runtime: requirements.txt | $(PY)
	$(PY) -m pip install --disable-pip-version-check -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install --disable-pip-version-check -r requirements-dev.txt
	touch $@ $(VENV)/.installed-runtime

venv: $(VENV)/.installed-runtime
venv-dev: $(VENV)/.installed-dev

chromium:
	@scripts/ensure-chromium

# --- the app ------------------------------------------------------------------------------------
run: venv
	@VENV=$(VENV) scripts/run

# --- tests --------------------------------------------------------------------------------------
# Each suite runs even when another failed (-k), and `make test` still fails at the end. The suites are
# independent (SQLite in memory or a temporary file, or their own PostgreSQL and Redis databases), so two run at a time
# (-j2); -O prints each suite's output whole when it ends instead of interleaving lines.
test: venv-dev chromium
	@$(MAKE) --no-print-directory -k -j2 -O test-integration test-unit test-postgres test-browser

test-unit: venv-dev
	@echo "== unit and Django tests on SQLite"
	$(SQLITE_ENV) $(call pytest_run,tests --ignore=tests/integration --ignore=tests/browser)

test-integration: venv-dev
	@echo "== integration tests on PostgreSQL + Redis + a Celery worker ($(TEST_DATABASE_URL), $(TEST_REDIS_URL))"
	$(SERVICES_ENV) $(call pytest_run,tests/integration)

test-browser: venv-dev chromium
	@echo "== browser tests (Chromium, live server on SQLite)"
	$(SQLITE_ENV) $(call pytest_run,tests/browser)

test-postgres: venv-dev
	@echo "== tests/reviewapp on PostgreSQL ($(TEST_POSTGRES_DATABASE_URL))"
	env DATABASE_URL=$(TEST_POSTGRES_DATABASE_URL) CELERY_BROKER_URL=$(TEST_POSTGRES_REDIS_URL) \
	  TEST_DATABASE_URL=$(TEST_POSTGRES_DATABASE_URL) TEST_REDIS_URL=$(TEST_POSTGRES_REDIS_URL) \
	  $(call pytest_run,tests/reviewapp)

# --- quality ------------------------------------------------------------------------------------
lint: venv-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy scoring

# Every bench/*.py (bench/_*.py are their shared helpers), or one with its options:
#   make bench BENCH=compare BENCH_ARGS="--size 100000 --label-studio"
#   make bench BENCH=reviewers BENCH_ARGS="--users 50 --seconds 180"
BENCH ?=
BENCH_ARGS ?=
$(VENV)/.installed-bench: requirements.txt requirements-dev.txt requirements-bench.txt | $(PY)
	$(PY) -m pip install --disable-pip-version-check -r requirements-bench.txt
	touch $@ $(VENV)/.installed-dev $(VENV)/.installed-runtime

bench: $(VENV)/.installed-bench
	@if [ -n "$(BENCH)" ]; then PYTHONPATH=. $(PY) bench/$(BENCH).py $(BENCH_ARGS); exit $$?; fi; \
	found=0; for f in bench/[!_]*.py; do \
	  [ -e "$$f" ] || continue; found=1; echo "== $$f"; \
	  PYTHONPATH=. $(PY) "$$f" || exit $$?; \
	done; [ $$found -eq 1 ] || echo "No benchmarks in bench/ yet."

clean:
	rm -rf .pytest_cache .ruff_cache .mypy_cache test-results
