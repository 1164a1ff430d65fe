# pyscheduler: `make run` starts the scheduler on a working default, `make test` passes the tests.
PYTHON ?= python3
PIP_STAMP := .venv-stamp
# helm, built from Go modules into the control plane's cache (e2e/controlplane/helm/go.mod)
HELM := $(shell bash -c '. e2e/controlplane/lib.sh && printf %s "$$HELM_BIN"')

.PHONY: install test test-unit e2e lint typecheck bench fuzz soak bench-live bench-arrival run differential controlplane-build controlplane-up controlplane-down e2e-kind clean lock audit audit-newest helm

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

lint: install helm
	$(PYTHON) -m ruff check scheduler tests e2e bench examples hack
	lint-imports
	$(PYTHON) -m mypy scheduler
	hadolint Dockerfile
	shellcheck -x e2e/controlplane/*.sh e2e/kind/run.sh .ci/run
	$(HELM) lint --strict charts/pyscheduler

## helm: build helm (only if missing) for lint and e2e/test_helm.py
helm:
	@test -x "$(HELM)" || bash e2e/controlplane/build.sh helm

typecheck: install
	$(PYTHON) -m mypy scheduler

## bench: offline scheduler_perf shapes through `simulate --output placements`
bench: install
	$(PYTHON) bench/run.py

## differential: random clusters and pods through the real kube-scheduler v1.36.3 and through
## `simulate`, every decision compared; prints decision counts and agreement per check
## (DIFFERENTIAL_FLAGS=--vary-args: non-default plugin args and weights on both sides;
## --workload: random gangs, PodGroups, with the workload-aware scheduling gates on both sides)
SEEDS ?= 1-30
DIFFERENTIAL_FLAGS ?=
differential: install
	PYTHONPATH=e2e $(PYTHON) -m differential --seeds $(SEEDS) $(DIFFERENTIAL_FLAGS)

## bench-live: kube-scheduler v1.36.3's own scheduler_perf workloads (the 39 performance test
## cases), kube-scheduler vs ours on a fresh local control plane per run, then the table;
## QUICK=1: SchedulingBasic at scale 0.1; ROUNDS=n; BENCH_LIVE_ARGS: more bench/live.py flags
## (--workloads, --scale, --contestants kube,ours,bind,bindev, --out DIR)
bench-live: install
	$(PYTHON) bench/live.py $(if $(filter 1 yes true,$(QUICK)),--quick) $(if $(ROUNDS),--rounds $(ROUNDS)) $(BENCH_LIVE_ARGS)

## bench-arrival: created -> bound latency at steady creation rates, kube-scheduler vs ours
## (SchedulingBasic, 5000 kwok nodes, 50/s and 200/s for 60 s; BENCH_ARRIVAL_ARGS: more flags)
bench-arrival: install
	$(PYTHON) bench/arrival.py $(BENCH_ARRIVAL_ARGS)

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

## lock: requirements.lock (the image's runtime dependencies) and requirements-build.lock (what
## builds the wheel) from pyproject.toml: each the newest release pyproject admits, with the hashes
## of all its files. Run it on Python 3.11, the image's, after changing a dependency range.
lock: install
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || \
	  { echo "make lock: the locks are for the image's Python 3.11"; exit 1; }
	CUSTOM_COMPILE_COMMAND="make lock" $(PYTHON) -m piptools compile --quiet --upgrade --generate-hashes \
	  --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links \
	  --output-file requirements.lock pyproject.toml
	CUSTOM_COMPILE_COMMAND="make lock" $(PYTHON) -m piptools compile --quiet --upgrade --generate-hashes \
	  --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links \
	  --only-build-deps --build-deps-for wheel --output-file requirements-build.lock pyproject.toml

## audit: every pin of the locks against published advisories (pip-audit; AUDIT_SERVICE=pypi asks
## PyPI's per-release advisory data, =osv asks OSV). Not part of CI: CI may not reach either
## service. Where only PyPI's project pages answer, audit-newest checks the pins that are newest.
AUDIT_SERVICE ?= pypi
audit: install
	$(PYTHON) -m pip_audit --strict --require-hashes --disable-pip --vulnerability-service $(AUDIT_SERVICE) \
	  -r requirements.lock -r requirements-build.lock

audit-newest:
	$(PYTHON) hack/lockaudit.py requirements.lock requirements-build.lock

clean:
	rm -rf build dist *.egg-info $(PIP_STAMP) bench/out .pytest_cache .ruff_cache .mypy_cache

## fuzz: the fuzz tests' long profile (new examples each run), then the coverage-guided run of
## the config and cluster-file decoders (atheris; FUZZ_SECONDS per target, default 120). Not CI.
FUZZ_SECONDS ?= 120
fuzz: install
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e '.[fuzz]'
	PYSCHED_FUZZ=long $(PYTHON) -m pytest -q tests/fuzz
	$(PYTHON) bench/fuzz.py --seconds $(FUZZ_SECONDS)

## soak: an hour of pod churn (300 pods/min, 1000 kwok nodes) against `pyscheduler run` on a local
## control plane: RSS slope, queue and cache sizes, created->bound p99 per window (SOAK_MINUTES). Not CI.
SOAK_MINUTES ?= 60
soak: install
	$(PYTHON) bench/soak.py --minutes $(SOAK_MINUTES)
