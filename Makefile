# The two commands that matter: `make demo` and `make test`. Each sets up .venv itself.
SHELL := /bin/bash
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# checkov (the second IaC scanner) pins versions the project cannot use: it gets a virtualenv of its own.
CHECKOV_VENV := .venv-checkov
CHECKOV := $(CHECKOV_VENV)/bin/checkov
TEMPLATE := cdk.out/GpuPilot.template.json
STACK_SOURCES := app.py cdk.json $(wildcard stacks/*.py) $(wildcard statemachines/*.json) \
	$(wildcard functions/*/*.py) $(wildcard functions/shared/*.py) $(wildcard functions/shared/*/*.py) \
	$(wildcard functions/shared/*/*/*.py) \
	$(wildcard functions/shared/data/*.json) $(wildcard functions/shared/data/prices/*.json)

.PHONY: setup browser screenshots synth demo serve test test-bytecode test-fast lint bench openapi cli-reference catalog prices clean

# uv installs what pip would, from the same pins, in seconds rather than minutes; pip takes over if uv cannot.
# --compile-bytecode: the suite starts hundreds of Python processes (local clouds, CLI runs, test workers); where
# PYTHONDONTWRITEBYTECODE is set, as on many CI images, none of them may write a .pyc, so without this each one compiles
# moto, botocore and the rest from source again (a local cloud took 4.9 s of CPU to start instead of 2.8 s).
UV_VERSION := 0.13.8
UV := $(VENV)/bin/uv

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet uv==$(UV_VERSION)
	($(UV) pip install --quiet --compile-bytecode --python $(PY) -r requirements-dev.txt && \
	  $(UV) pip install --quiet --python $(PY) --no-deps -e .) || \
	($(PY) -m pip install --quiet -r requirements-dev.txt && $(PY) -m pip install --quiet --no-deps -e .)
	touch $(STAMP)

setup: $(STAMP) browser

# The console's browser tests drive Debian's Chromium through Playwright (its Python package only: no browser is
# downloaded at test time); installed here where it is missing, as on a fresh CI machine.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@command -v chromium >/dev/null || { echo "installing Debian's chromium (the console's browser tests)"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }

$(CHECKOV): | $(STAMP)
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(UV) pip install --quiet --compile-bytecode --python $(CHECKOV_VENV)/bin/python checkov==3.3.30 || \
	  $(CHECKOV_VENV)/bin/python -m pip install --quiet checkov==3.3.30

$(TEMPLATE): $(STAMP) $(STACK_SOURCES)
	$(PY) -m stacks.synth

synth: $(TEMPLATE)

demo: synth
	$(VENV)/bin/gpupilot demo

serve: synth
	$(VENV)/bin/gpupilot serve

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy functions gpupilot stacks payloads host_agent app.py

# --iam-drift=strict: every AWS call is granted by the template, and every grant is used or documented.
# --dist loadfile: a test file's tests run on one worker, so a module's fixtures (a local cloud, a scan) are made once.
# -n 6 on a 2-core machine: an e2e test's worker mostly waits on its local cloud (on a fresh 2-core clone, pytest
# took 11 minutes at -n 2, 7 min 46 s at -n 3 and 7 min 20 s at -n 4), and beside another CPU-bound job more workers
# hold more of the cores' time (a fresh clone's run beside two CPU-bound processes: 17 min 34 s at -n 4, 16 min 11 s
# at -n 6).
# --no-loadscope-reorder: files start in collection order (bench, e2e, infra, integration, unit), the long ones
# first; xdist's default starts the files with the most tests first, which left a one-test bench file of 90 s last.
# What the tests need is made side by side (-j): on a machine busy with other work, each step alone got a share of
# the cores' time as one process among the others (a fresh clone's setup beside two CPU-bound processes: 95 s).
test: $(STAMP)
	$(MAKE) --no-print-directory -j 4 -O synth lint browser $(CHECKOV) test-bytecode
	GPUPILOT_REQUIRE_CHECKOV=1 $(PY) -m pytest -n 6 --dist loadfile --no-loadscope-reorder -q -p no:cacheprovider --iam-drift=strict tests host_agent/tests

# The project's own modules as bytecode before hundreds of processes import them (see --compile-bytecode); and the
# test modules as pytest rewrites their asserts, written once here: where PYTHONDONTWRITEBYTECODE is set, each of the
# six test workers would rewrite and compile every test module itself (4.4 s of CPU each). After the synth: collecting
# the tests reads the synthesized template.
test-bytecode: $(TEMPLATE)
	$(PY) -m compileall -q -j 0 app.py functions gpupilot host_agent stacks payloads bench tests >/dev/null
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest --collect-only -q -p no:cacheprovider tests host_agent/tests >/dev/null

# The console's screenshots in docs/console/, from its browser tests (a plain test run leaves them as they are).
screenshots: synth browser
	GPUPILOT_SCREENSHOTS=docs/console $(PY) -m pytest -q -p no:cacheprovider tests/e2e/test_console.py

test-fast: setup
	$(PY) -m pytest -q -p no:cacheprovider tests/unit host_agent/tests

openapi: setup
	$(PY) -m gpupilot.openapi

# docs/cli.md's reference is the CLI's own help (a test fails when it is stale).
cli-reference: setup
	$(PY) -m gpupilot.clidoc

# The benches write bench/results/*.json; docs/benchmarks.md is rendered from them, never edited by hand.
bench: synth
	$(PY) -m bench.run
	$(PY) -m bench.render
	$(PY) -m bench.scaling_page

# Refresh the bundled snapshots from a real account (your AWS credentials; read-only calls).
catalog: setup
	$(PY) -m gpupilot.snapshots catalog --region $(or $(REGION),us-east-1)

prices: setup
	$(PY) -m gpupilot.snapshots prices $(if $(REGION),--region $(REGION))

clean:
	rm -rf cdk.out .build .gpupilot
