# pyscheduler: `make run` starts the scheduler on a working default, `make test` passes the tests.
PYTHON ?= python3
PIP_STAMP := .venv-stamp

.PHONY: install test test-unit e2e lint typecheck bench bench-live run differential controlplane-build controlplane-up controlplane-down e2e-kind clean

install: $(PIP_STAMP)

$(PIP_STAMP): pyproject.toml
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(PIP_STAMP)

## test: unit tests, then the e2e suite against a real local control plane (built on first use)
test: install
	$(PYTHON) -m pytest -q tests e2e

test-unit: install
	$(PYTHON) -m pytest -q tests

e2e: install
	$(PYTHON) -m pytest -q e2e

lint: install
	$(PYTHON) -m ruff check scheduler tests e2e bench examples
	lint-imports
	$(PYTHON) -m mypy scheduler
	hadolint Dockerfile
	shellcheck -x e2e/controlplane/*.sh e2e/kind/run.sh .ci/run

typecheck: install
	$(PYTHON) -m mypy scheduler

## bench: offline scheduler_perf shapes through `simulate --output placements`
bench: install
	$(PYTHON) bench/run.py

## differential: random clusters and pods through the real kube-scheduler v1.36.3 and through
## `simulate`, every decision compared; prints decision counts and agreement per check
## (DIFFERENTIAL_FLAGS=--vary-args: non-default plugin args and weights on both sides)
SEEDS ?= 1-30
DIFFERENTIAL_FLAGS ?=
differential: install
	PYTHONPATH=e2e $(PYTHON) -m differential --seeds $(SEEDS) $(DIFFERENTIAL_FLAGS)

## bench-live: kube-scheduler vs bind-only vs ours on a local control plane (5000 kwok nodes;
## QUICK=1: SchedulingBasic at 1000 nodes; ROUNDS=n; BENCH_LIVE_ARGS: more bench/live.py flags)
bench-live: install
	$(PYTHON) bench/live.py $(if $(filter 1 yes true,$(QUICK)),--quick) $(if $(ROUNDS),--rounds $(ROUNDS)) $(BENCH_LIVE_ARGS)

## run: the scheduler in the foreground against the current cluster, or a local control plane
run: install
	$(PYTHON) e2e/run_local.py

controlplane-build:
	bash e2e/controlplane/build.sh

controlplane-up: controlplane-build
	bash e2e/controlplane/up.sh

controlplane-down:
	bash e2e/controlplane/down.sh

## e2e-kind: for machines with Docker: kind cluster, image, manifests, same e2e suite
e2e-kind: install
	bash e2e/kind/run.sh

clean:
	rm -rf build dist *.egg-info $(PIP_STAMP) bench/out .pytest_cache .ruff_cache .mypy_cache
