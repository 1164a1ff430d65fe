# syntax=docker/dockerfile:1
# pyscheduler image: a wheel built from pyproject.toml, installed into a venv with the
# dependencies of requirements.lock (hash-checked), copied into a slim runtime stage that runs
# as uid/gid 65532.
#   docker build -t pyscheduler:dev .
# The lock files are made by `make lock` (pip-compile --generate-hashes) for this image's Python.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
# .dockerignore lets only pyproject.toml, requirements*.lock, README*, LICENSE* and scheduler/ in.
COPY . .
# Build tools and every runtime dependency come from the locks, each file checked against its
# hash; the project's own wheel (built here, not downloaded) goes in without dependencies, and
# `pip check` proves the lock satisfies it. The venv gets no pip: nothing installs at run time.
RUN python -m pip install --no-cache-dir --require-hashes --no-deps -r requirements-build.lock \
 && python -m pip wheel --no-cache-dir --no-deps --no-build-isolation --wheel-dir /wheels . \
 && python -m venv --without-pip /opt/venv \
 && python -m pip --python /opt/venv/bin/python install --no-cache-dir --require-hashes --no-deps \
      -r requirements.lock \
 && python -m pip --python /opt/venv/bin/python install --no-cache-dir --no-deps --no-index /wheels/*.whl \
 && python -m pip --python /opt/venv/bin/python check \
 && /opt/venv/bin/pyscheduler --help >/dev/null

FROM ${PYTHON_IMAGE}
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# The base image's own installer is not needed at run time (and is the one package there that
# the lock does not pin).
RUN python -m pip uninstall --yes --quiet pip setuptools wheel \
 && groupadd --gid 65532 nonroot \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin nonroot
COPY --from=builder /opt/venv /opt/venv
USER 65532:65532
EXPOSE 10259
ENTRYPOINT ["pyscheduler"]
CMD ["run", "--config", "/etc/pyscheduler/config.yaml"]
