"""The configured extenders built into clients (upstream scheduler.go buildExtenders, v1.36.3)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import API_VERSION, KIND, parse_config
from scheduler.extender import ExtenderBuildError, build_extenders


def _cfg(extenders: list[dict[str, Any]], **fields: Any) -> Any:
    return parse_config({"apiVersion": API_VERSION, "kind": KIND, "extenders": extenders, **fields})


def test_no_extenders_leaves_the_config_alone() -> None:
    cfg = _cfg([])
    assert build_extenders(cfg) == ([], cfg)


def test_ignorable_extenders_go_last_in_their_order() -> None:
    cfg = _cfg(
        [
            {"urlPrefix": "http://a", "ignorable": True},
            {"urlPrefix": "http://b"},
            {"urlPrefix": "http://c", "ignorable": True},
            {"urlPrefix": "http://d"},
        ]
    )
    extenders, _ = build_extenders(cfg)
    assert [e.name() for e in extenders] == ["http://b", "http://d", "http://a", "http://c"]


def test_ignored_resources_replace_node_resources_fit_ignored_resources() -> None:
    cfg = _cfg(
        [
            {
                "urlPrefix": "http://a",
                "managedResources": [
                    {"name": "example.com/foo", "ignoredByScheduler": True},
                    {"name": "example.com/bar"},
                ],
            },
            {"urlPrefix": "http://b", "managedResources": [{"name": "example.com/baz", "ignoredByScheduler": True}]},
        ],
        profiles=[
            {"schedulerName": "one"},
            {
                "schedulerName": "two",
                "pluginConfig": [{"name": "NodeResourcesFit", "args": {"ignoredResources": ["example.com/own"]}}],
            },
        ],
    )
    _, out = build_extenders(cfg)
    assert [p.plugin_args["NodeResourcesFit"]["ignoredResources"] for p in out.profiles] == [
        ["example.com/foo", "example.com/baz"],
        ["example.com/foo", "example.com/baz"],
    ]
    assert "NodeResourcesFit" not in cfg.profiles[0].plugin_args  # the input is not changed


def test_ignored_resources_need_node_resources_fit() -> None:
    cfg = _cfg(
        [{"urlPrefix": "http://a", "managedResources": [{"name": "example.com/foo", "ignoredByScheduler": True}]}],
        profiles=[{"schedulerName": "a", "plugins": {"multiPoint": {"disabled": [{"name": "NodeResourcesFit"}]}}}],
    )
    with pytest.raises(ExtenderBuildError) as ei:
        build_extenders(cfg)
    assert str(ei.value) == "couldn't build extenders: can't find NodeResourcesFitArgs in plugin config"


def test_a_tls_problem_names_the_build() -> None:
    cfg = _cfg([{"urlPrefix": "https://a", "tlsConfig": {"insecure": True, "caData": "YWJj"}}])
    with pytest.raises(ExtenderBuildError) as ei:
        build_extenders(cfg)
    assert str(ei.value) == (
        "couldn't build extenders: specifying a root certificates file with the insecure flag is not allowed"
    )
