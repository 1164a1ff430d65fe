"""`simulate` with a scheduler extender served on loopback: the same algorithm as `run` asks
it over HTTP (filter, prioritize, preempt), never to bind."""

from __future__ import annotations

import io
import json
import socket
from pathlib import Path
from typing import Any

import yaml

from scheduler.simulate.simulator import run
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.extender import ExtenderServer


def _files(tmp_path: Path, docs: list[dict[str, Any]], extender: dict[str, Any]) -> tuple[str, str]:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(docs))
    config = tmp_path / "config.yaml"
    kind = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    config.write_text(yaml.safe_dump({**kind, "extenders": [extender]}))
    return str(cluster), str(config)


def _simulate(cluster: str, config: str) -> list[dict[str, Any]]:
    buf = io.StringIO()
    assert run(cluster, config, 1, "json", stream=buf) == 0
    return [json.loads(line) for line in buf.getvalue().splitlines()]


def _filter_out(name: str) -> Any:
    def answer(body: dict[str, Any]) -> tuple[int, Any]:
        names = [n for n in body["NodeNames"] if n != name]
        return 200, {"NodeNames": names, "FailedNodes": {name: f"{name} is reserved"}}

    return answer


def test_filter_prioritize_but_no_bind(tmp_path: Path) -> None:
    handlers = {
        "/filter": _filter_out("n1"),
        "/prioritize": lambda body: (200, [{"Host": n, "Score": 10 if n == "n2" else 0} for n in body["NodeNames"]]),
        "/bind": lambda body: (500, {}),
    }
    with ExtenderServer(handlers) as ext:
        cluster, config = _files(
            tmp_path,
            [make_node(n) for n in ("n1", "n2", "n3")] + [make_pod("p", cpu="1")],
            {
                "urlPrefix": ext.url,
                "filterVerb": "filter",
                "prioritizeVerb": "prioritize",
                "bindVerb": "bind",
                "weight": 2,
                "nodeCacheCapable": True,
            },
        )
        [rec] = _simulate(cluster, config)
        assert ext.paths() == ["/filter", "/prioritize"]
    assert rec["node"] == "n2"
    assert rec["filtered"]["n1"] == {"plugin": "", "reasons": ["n1 is reserved"]}
    assert rec["scores"]["n2"]["extenders"] == {ext.url: {"score": 10, "final": 200}}
    assert rec["scores"]["n3"]["extenders"] == {ext.url: {"score": 0, "final": 0}}
    plugins = sum(v["final"] for v in rec["scores"]["n2"]["plugins"].values())
    assert rec["scores"]["n2"]["total"] == plugins + 200


def test_extender_rejections_are_the_fit_error(tmp_path: Path) -> None:
    with ExtenderServer({"/filter": _filter_out("n1")}) as ext:
        cluster, config = _files(
            tmp_path,
            [make_node("n1"), make_pod("p", cpu="1")],
            {"urlPrefix": ext.url, "filterVerb": "filter", "nodeCacheCapable": True},
        )
        [rec] = _simulate(cluster, config)
    assert rec["node"] is None
    assert rec["message"].startswith("0/1 nodes are available: 1 n1 is reserved.")


def test_unreachable_extender_is_the_attempts_error(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    docs = [make_node("n1"), make_node("n2"), make_pod("p")]
    cluster, config = _files(tmp_path, docs, {"urlPrefix": url, "filterVerb": "f"})
    [rec] = _simulate(cluster, config)
    assert rec["node"] is None
    assert rec["message"] == f'Post "{url}/f": dial tcp 127.0.0.1:{port}: connect: connection refused'
    # Ignorable: the same extender is skipped.
    cluster, config = _files(tmp_path, docs, {"urlPrefix": url, "filterVerb": "f", "ignorable": True})
    [rec] = _simulate(cluster, config)
    assert rec["node"] in ("n1", "n2")


def test_a_build_error_exits_2(tmp_path: Path, capsys: Any) -> None:
    cluster, config = _files(
        tmp_path, [make_node("n1")], {"urlPrefix": "https://e", "tlsConfig": {"insecure": True, "caData": "YWJj"}}
    )
    assert run(cluster, config, 1, "json", stream=io.StringIO()) == 2
    assert capsys.readouterr().err == (
        f"error: {config}: couldn't build extenders: "
        "specifying a root certificates file with the insecure flag is not allowed\n"
    )
