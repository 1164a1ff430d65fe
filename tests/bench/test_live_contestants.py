"""The schedulers' configuration the live bench writes (bench/live_contestants.py)."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from bench.live_contestants import scheduler_config
from scheduler.config import load_config


@pytest.mark.parametrize(
    ("content_type", "want"),
    [
        # Unset: v1's default (SetDefaults_ClientConnectionConfiguration: protobuf).
        (None, "application/vnd.kubernetes.protobuf"),
        ("protobuf", "application/vnd.kubernetes.protobuf"),
        ("json", "application/json"),
    ],
)
def test_both_schedulers_read_the_content_type_given(content_type: str | None, want: str,
                                                     tmp_path: pathlib.Path) -> None:
    path = tmp_path / "config.yaml"
    scheduler_config(path, "/k/kubeconfig", 5000, content_type)
    written = yaml.safe_load(path.read_text())["clientConnection"]
    assert ("contentType" in written) is (content_type is not None)
    cc = load_config(str(path)).client_connection
    assert (cc.content_type, cc.qps, cc.burst, cc.kubeconfig) == (want, 5000, 5000, "/k/kubeconfig")
