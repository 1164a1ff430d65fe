# syntax=docker/dockerfile:1
# pyscheduler image: a wheel built from pyproject.toml, installed into a venv,
# copied into a slim runtime stage that runs as uid/gid 65532.
#   docker build -t pyscheduler:dev .
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
# .dockerignore lets only pyproject.toml, requirements.lock, README*, LICENSE* and scheduler/ in.
COPY . .
RUN python -m pip wheel --no-cache-dir --no-deps --wheel-dir /wheels . \
 && python -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir --constraint requirements.lock /wheels/*.whl \
 && /opt/venv/bin/pyscheduler --help >/dev/null

FROM ${PYTHON_IMAGE}
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
RUN groupadd --gid 65532 nonroot \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin nonroot
COPY --from=builder /opt/venv /opt/venv
USER 65532:65532
EXPOSE 10259
ENTRYPOINT ["pyscheduler"]
CMD ["run", "--config", "/etc/pyscheduler/config.yaml"]
