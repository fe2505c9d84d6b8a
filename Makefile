# Tandem: `make run` starts it on the built-in simulator; `make test` runs the whole suite.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run cluster test lint bench clean

# Finds a Python >= 3.12: python3 if new enough, then python3.13/python3.12, then pyenv's versions.
define find_python
for c in python3 python3.13 python3.12 $$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -rV); do \
  if "$$c" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then echo "$$c"; exit 0; fi; \
done; echo "no Python >= 3.12 found" >&2; exit 1
endef

$(STAMP): pyproject.toml
	@py=$$($(find_python)) && echo "using $$py" && "$$py" -m venv --clear $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)

# A local run is a development run: DEBUG on (demo accounts, no HTTPS-only cookies).
run: $(STAMP)
	DEBUG=$${DEBUG:-true} $(PY) manage.py tandem

# The scale-out stack: nginx on HOST:PORT, 3 web processes and 2 tool workers (settable with
# WEB=n WORKERS=m) on DATABASE_URL (PostgreSQL) and REDIS_URL. README "Running at scale".
cluster: $(STAMP)
	DEBUG=$${DEBUG:-true} TASKS_BACKEND=tools.db_backend.DatabaseBackend \
	  $(PY) manage.py tandem_cluster --web $${WEB:-3} --workers $${WORKERS:-2}

test: $(STAMP)
	$(PY) -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/mypy .

bench: $(STAMP)
	$(PY) -m pytest -m slow -s

clean:
	rm -rf $(VENV)
