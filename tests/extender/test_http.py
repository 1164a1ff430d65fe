"""The HTTP extender client against a real extender on loopback.

Upstream (kubernetes v1.36.3): pkg/scheduler/extender.go (wire shapes, error texts),
extender_test.go TestIsInterested, TestConvertToMetaVictims, TestConvertToVictims;
kube-scheduler extender/v1 types_test.go TestCompatibility (field names, case-insensitive
decoding); client-go transport.TLSConfigFor (the TLS errors).
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from typing import Any

import pytest

from scheduler.config.types import Extender as ExtenderConfig
from scheduler.config.types import ExtenderManagedResource, ExtenderTLSConfig
from scheduler.extender.http import DEFAULT_EXTENDER_TIMEOUT, ExtenderError, HTTPExtender, TLSSetupError
from scheduler.framework.extender import Binding, HostPriority, Victims
from scheduler.live.serving.tls import self_signed_pair
from scheduler.model.node import NodeInfo
from scheduler.model.pod import PodInfo
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.extender import ExtenderServer
from scheduler.testing.framework import new_snapshot

POD = PodInfo(make_pod("p", uid="pod-uid"))


def _nodes(*names: str) -> list[NodeInfo]:
    return [NodeInfo(make_node(n)) for n in names]


def _ext(url: str, **kw: Any) -> HTTPExtender:
    return HTTPExtender(ExtenderConfig(url_prefix=url, **kw))


@pytest.fixture
def server() -> Iterator[ExtenderServer]:
    with ExtenderServer({}) as s:
        yield s


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- filter --------------------------------------------------------------------------------


def test_filter_sends_whole_nodes_and_wraps_the_answer_in_new_node_infos(server: ExtenderServer) -> None:
    nodes = _nodes("a", "b")
    server.handlers["/x/filter"] = lambda body: (
        200,
        {"Nodes": {"items": [body["Nodes"]["items"][1]]}, "FailedNodes": {"a": "no"}, "Error": ""},
    )
    ext = _ext(server.url + "/x/", filter_verb="filter")
    kept, failed, unresolvable = ext.filter(POD, nodes)
    path, body = server.requests[0]
    assert path == "/x/filter"  # the prefix's trailing slash is trimmed
    assert set(body) == {"Pod", "Nodes", "NodeNames"}
    assert body["NodeNames"] is None
    assert body["Pod"]["metadata"]["name"] == "p" and "kind" not in body["Pod"] and "apiVersion" not in body["Pod"]
    assert body["Nodes"]["metadata"] == {}
    assert [n["metadata"]["name"] for n in body["Nodes"]["items"]] == ["a", "b"]
    assert "kind" not in body["Nodes"]["items"][0]
    assert server.headers[0]["Content-Type"] == "application/json"
    # A new NodeInfo from the answer, as upstream builds it: no pods, no image states.
    assert [n.name for n in kept] == ["b"] and kept[0] is not nodes[1]
    assert kept[0].pods == [] and kept[0].image_states == {}
    assert (failed, unresolvable) == ({"a": "no"}, {})


def test_node_cache_capable_filter_sends_names_and_keeps_the_input_objects(server: ExtenderServer) -> None:
    nodes = _nodes("a", "b", "c")
    server.handlers["/filter"] = lambda body: (
        200,
        {"NodeNames": ["c", "a"], "FailedAndUnresolvableNodes": {"b": "gone"}},
    )
    ext = _ext(server.url, filter_verb="filter", node_cache_capable=True)
    kept, failed, unresolvable = ext.filter(POD, nodes)
    body = server.requests[0][1]
    assert (body["Nodes"], body["NodeNames"]) == (None, ["a", "b", "c"])
    assert kept == [nodes[2], nodes[0]]  # the extender's order, the scheduler's own NodeInfos
    assert (failed, unresolvable) == ({}, {"b": "gone"})


def test_node_cache_capable_answer_naming_an_unknown_node(server: ExtenderServer) -> None:
    server.handlers["/filter"] = lambda body: (200, {"NodeNames": ["a", "zz"]})
    ext = _ext(server.url, filter_verb="filter", node_cache_capable=True)
    with pytest.raises(ExtenderError) as ei:
        ext.filter(POD, _nodes("a"))
    assert str(ei.value) == (
        f'extender "{server.url}" claims a filtered node "zz" which is not found in the input node list'
    )


def test_answer_keys_match_case_insensitively(server: ExtenderServer) -> None:
    # types_test.go TestCompatibility: the lowercased JSON decodes to the same values.
    server.handlers["/filter"] = lambda body: (200, {"nodenames": ["a"], "failednodes": {"b": "x"}, "error": ""})
    ext = _ext(server.url, filter_verb="filter", node_cache_capable=True)
    kept, failed, _ = ext.filter(POD, _nodes("a", "b"))
    assert ([n.name for n in kept], failed) == (["a"], {"b": "x"})


def test_no_nodes_in_the_answer_filters_every_node_out(server: ExtenderServer) -> None:
    server.handlers["/filter"] = lambda body: (200, {})
    kept, failed, unresolvable = _ext(server.url, filter_verb="filter").filter(POD, _nodes("a"))
    assert (kept, failed, unresolvable) == ([], {}, {})


def test_no_filter_verb_passes_every_node_without_a_call(server: ExtenderServer) -> None:
    nodes = _nodes("a")
    assert _ext(server.url).filter(POD, nodes) == (nodes, {}, {})
    assert server.requests == []


@pytest.mark.parametrize(
    ("status", "answer", "want"),
    [
        (200, {"Error": "no GPU left"}, "no GPU left"),
        (500, {"Error": "x"}, "failed filter with extender at URL {url}/filter, code 500"),
        (404, b"", "failed filter with extender at URL {url}/filter, code 404"),
        (200, b"", "EOF"),
        (200, b"  \n", "EOF"),
        (200, b"nope", "invalid character 'n' looking for beginning of value"),
        (200, b'{"Error": "x"', "unexpected EOF"),
        (200, b'{"Error" "x"}', "invalid character '\"' after object key"),
        (
            200,
            {"NodeNames": "a"},
            "json: cannot unmarshal string into Go struct field ExtenderFilterResult.NodeNames of type []string",
        ),
        (200, [1], "json: cannot unmarshal array into Go value of type v1.ExtenderFilterResult"),
    ],
    ids=["error-field", "status-500", "status-404", "empty-body", "blank-body", "not-json", "truncated",
         "missing-colon", "wrong-type", "not-an-object"],
)
def test_filter_failures_read_as_upstreams(server: ExtenderServer, status: int, answer: Any, want: str) -> None:
    server.handlers["/filter"] = lambda body: (status, answer)
    with pytest.raises(ExtenderError) as ei:
        _ext(server.url, filter_verb="filter", node_cache_capable=True).filter(POD, _nodes("a"))
    assert str(ei.value) == want.format(url=server.url)


def test_connection_refused_reads_as_gos_dial_error() -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(ExtenderError) as ei:
        _ext(url, filter_verb="filter").filter(POD, _nodes("a"))
    assert str(ei.value) == f'Post "{url}/filter": dial tcp 127.0.0.1:{port}: connect: connection refused'


def test_timeout_covers_the_whole_call() -> None:
    with ExtenderServer({"/filter": lambda body: (200, {})}, delay=1.0) as s:
        ext = _ext(s.url, filter_verb="filter", http_timeout=0.2)
        with pytest.raises(ExtenderError) as ei:
            ext.filter(POD, _nodes("a"))
        assert str(ei.value) == (
            f'Post "{s.url}/filter": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
        )


def test_unsupported_scheme() -> None:
    with pytest.raises(ExtenderError) as ei:
        _ext("", filter_verb="filter").filter(POD, _nodes("a"))
    assert str(ei.value) == 'Post "/filter": unsupported protocol scheme ""'


def test_http_timeout_defaults() -> None:
    # NewHTTPExtender: 0 means DefaultExtenderTimeout; Go's client has none for a negative one.
    assert _ext("http://x").timeout == DEFAULT_EXTENDER_TIMEOUT == 5.0
    assert _ext("http://x", http_timeout=30.0).timeout == 30.0
    assert _ext("http://x", http_timeout=-1.0).timeout is None


def test_connections_are_reused(server: ExtenderServer) -> None:
    server.handlers["/filter"] = lambda body: (200, {"NodeNames": ["a"]})
    ext = _ext(server.url, filter_verb="filter", node_cache_capable=True)
    for _ in range(3):
        ext.filter(POD, _nodes("a"))
    assert len(server.requests) == 3
    assert len(ext._idle[("http", "127.0.0.1", server.port)]) == 1


# -- prioritize, bind ----------------------------------------------------------------------


def test_prioritize_returns_the_scores_and_the_weight(server: ExtenderServer) -> None:
    server.handlers["/prio"] = lambda body: (200, [{"Host": "a", "Score": 3}, {"host": "b", "score": 11}])
    got = _ext(server.url, prioritize_verb="prio", weight=4).prioritize(POD, _nodes("a", "b"))
    assert got == ([HostPriority("a", 3), HostPriority("b", 11)], 4)


def test_prioritize_without_verb_gives_zeros_and_weight_zero(server: ExtenderServer) -> None:
    assert _ext(server.url, weight=4).prioritize(POD, _nodes("a")) == ([HostPriority("a", 0)], 0)
    assert server.requests == []


def test_prioritize_rejects_a_fractional_score(server: ExtenderServer) -> None:
    server.handlers["/prio"] = lambda body: (200, [{"Host": "a", "Score": 1.5}])
    with pytest.raises(ExtenderError) as ei:
        _ext(server.url, prioritize_verb="prio", weight=1).prioritize(POD, _nodes("a"))
    assert str(ei.value) == "json: cannot unmarshal number 1.5 into Go struct field HostPriority.Score of type int64"


def test_bind_sends_the_binding_args(server: ExtenderServer) -> None:
    server.handlers["/bind"] = lambda body: (200, {"Error": ""})
    ext = _ext(server.url, bind_verb="bind")
    ext.bind(Binding("ns", "p", "uid-1", "n1"))
    assert server.requests == [("/bind", {"PodName": "p", "PodNamespace": "ns", "PodUID": "uid-1", "Node": "n1"})]
    server.handlers["/bind"] = lambda body: (200, {"Error": "node is full"})
    with pytest.raises(ExtenderError, match=r"^node is full$"):
        ext.bind(Binding("ns", "p", "uid-1", "n1"))


def test_bind_without_verb() -> None:
    with pytest.raises(ExtenderError, match=r"^unexpected empty bindVerb in extender$"):
        _ext("http://127.0.0.1:1").bind(Binding("ns", "p", "u", "n"))


# -- preemption ----------------------------------------------------------------------------


def _victims_setup() -> tuple[Any, dict[str, Victims]]:
    # extender_test.go TestConvertToVictims: pods 1 and 3 on node1, 2 and 4 on node2.
    pods = [PodInfo(make_pod(f"pod{i}", uid=f"uid{i}", node_name=f"node{2 - i % 2}")) for i in range(1, 5)]
    snap = new_snapshot([make_node("node1"), make_node("node2")], pods)
    victims = {"node1": Victims([pods[0], pods[2]], 1), "node2": Victims([pods[1], pods[3]], 2)}
    return snap, victims


def test_preemption_to_a_node_cache_capable_extender_sends_uids(server: ExtenderServer) -> None:
    # TestConvertToMetaVictims and TestConvertToVictims: NumPDBViolations travels both ways.
    snap, victims = _victims_setup()
    server.handlers["/preempt"] = lambda body: (200, {"NodeNameToMetaVictims": body["NodeNameToMetaVictims"]})
    ext = _ext(server.url, preempt_verb="preempt", node_cache_capable=True)
    got = ext.process_preemption(POD, victims, snap)
    body = server.requests[0][1]
    assert body["NodeNameToVictims"] is None
    assert body["NodeNameToMetaVictims"] == {
        "node1": {"Pods": [{"UID": "uid1"}, {"UID": "uid3"}], "NumPDBViolations": 1},
        "node2": {"Pods": [{"UID": "uid2"}, {"UID": "uid4"}], "NumPDBViolations": 2},
    }
    assert {n: ([p.name for p in v.pods], v.num_pdb_violations) for n, v in got.items()} == {
        "node1": (["pod1", "pod3"], 1),
        "node2": (["pod2", "pod4"], 2),
    }


def test_preemption_to_other_extenders_sends_whole_pods(server: ExtenderServer) -> None:
    snap, victims = _victims_setup()
    server.handlers["/preempt"] = lambda body: (
        200,
        {"NodeNameToMetaVictims": {"node2": {"Pods": [{"UID": "uid4"}], "NumPDBViolations": 0}}},
    )
    got = _ext(server.url, preempt_verb="preempt").process_preemption(POD, victims, snap)
    body = server.requests[0][1]
    assert body["NodeNameToMetaVictims"] is None
    assert [p["metadata"]["name"] for p in body["NodeNameToVictims"]["node1"]["Pods"]] == ["pod1", "pod3"]
    assert {n: [p.name for p in v.pods] for n, v in got.items()} == {"node2": ["pod4"]}


@pytest.mark.parametrize(
    ("answer", "want"),
    [
        (
            {"NodeNameToMetaVictims": {"node1": {"Pods": [{"UID": "uid2"}]}}},
            "extender: {url} claims to preempt pod (UID: &{{uid2}}) on node: node1, "
            "but the pod is not found on that node",
        ),
        ({"NodeNameToMetaVictims": {"nodeX": {"Pods": []}}}, 'nodeinfo not found for node name "nodeX"'),
    ],
    ids=["pod-not-on-node", "unknown-node"],
)
def test_preemption_answers_the_scheduler_cannot_map(server: ExtenderServer, answer: Any, want: str) -> None:
    snap, victims = _victims_setup()
    server.handlers["/preempt"] = lambda body: (200, answer)
    with pytest.raises(ExtenderError) as ei:
        _ext(server.url, preempt_verb="preempt").process_preemption(POD, victims, snap)
    assert str(ei.value) == want.format(url=server.url)


def test_preemption_without_verb() -> None:
    snap, victims = _victims_setup()
    with pytest.raises(ExtenderError) as ei:
        _ext("http://e").process_preemption(POD, victims, snap)
    assert str(ei.value) == "preempt verb is not defined for extender http://e but run into ProcessPreemption"


# -- interest (extender_test.go TestIsInterested) ------------------------------------------


@pytest.mark.parametrize(
    ("managed", "pod", "want"),
    [
        ((), make_pod(), True),
        (("memory",), make_pod(containers=[{"name": "app"}]), False),
        (("memory",), make_pod(requests={"memory": "0"}), True),
        (("memory",), make_pod(containers=[{"name": "app", "resources": {"limits": {"memory": "0"}}}]), True),
        (
            ("memory",),
            make_pod(
                containers=[{"name": "app"}],
                init_containers=[{"name": "i", "resources": {"requests": {"memory": "0"}}}],
            ),
            True,
        ),
        (("example.com/gpu",), make_pod(requests={"cpu": "1"}), False),
    ],
    ids=["empty managed resources", "managed memory, empty resources", "container memory with requests",
         "container memory with limits", "init container memory", "another resource"],
)
def test_is_interested(managed: tuple[str, ...], pod: dict[str, Any], want: bool) -> None:
    ext = _ext("http://e", managed_resources=tuple(ExtenderManagedResource(m) for m in managed))
    assert ext.is_interested(PodInfo(pod)) is want


# -- TLS (client-go TLSConfigFor) ----------------------------------------------------------


@pytest.fixture(scope="module")
def tls_pair() -> tuple[bytes, bytes, bytes]:
    """(chain, key, CA certificate) for localhost and 127.0.0.1."""
    chain, key = self_signed_pair("localhost")
    end = b"-----END CERTIFICATE-----\n"
    ca = chain[chain.index(end) + len(end):]
    return chain, key, ca


def _https_server(tls_pair: tuple[bytes, bytes, bytes], tmp_path: Any) -> ExtenderServer:
    chain, key, _ = tls_pair
    (tmp_path / "chain.pem").write_bytes(chain)
    (tmp_path / "key.pem").write_bytes(key)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tmp_path / "chain.pem", tmp_path / "key.pem")
    return ExtenderServer({"/filter": lambda body: (200, {"NodeNames": ["a"]})}, ssl_context=ctx)


@pytest.mark.parametrize(
    ("tls", "https", "ok"),
    [
        ("ca", False, True),
        ("ca-file", False, True),
        ("ca+servername", False, True),
        ("ca+wrong-servername", False, False),
        ("none", True, True),  # enableHTTPS without a CA: insecure
        ("insecure", False, True),
        ("none", False, False),  # the system roots do not know the test CA
    ],
)
def test_https(tls_pair: tuple[bytes, bytes, bytes], tmp_path: Any, tls: str, https: bool, ok: bool) -> None:
    _, _, ca = tls_pair
    (tmp_path / "ca.pem").write_bytes(ca)
    cfg = {
        "ca": ExtenderTLSConfig(ca_data=ca),
        "ca-file": ExtenderTLSConfig(ca_file=str(tmp_path / "ca.pem")),
        "ca+servername": ExtenderTLSConfig(ca_data=ca, server_name="localhost"),
        "ca+wrong-servername": ExtenderTLSConfig(ca_data=ca, server_name="elsewhere"),
        "insecure": ExtenderTLSConfig(insecure=True),
        "none": None,
    }[tls]
    with _https_server(tls_pair, tmp_path) as s:
        ext = _ext(s.url, filter_verb="filter", node_cache_capable=True, tls_config=cfg, enable_https=https)
        if ok:
            kept, _, _ = ext.filter(POD, _nodes("a"))
            assert [n.name for n in kept] == ["a"]
        else:
            with pytest.raises(ExtenderError) as ei:
                ext.filter(POD, _nodes("a"))
            assert str(ei.value).startswith(f'Post "{s.url}/filter": tls: failed to verify certificate: x509: ')


@pytest.mark.parametrize(
    ("cfg", "want"),
    [
        (
            ExtenderTLSConfig(insecure=True, ca_data=b"x"),
            "specifying a root certificates file with the insecure flag is not allowed",
        ),
        (ExtenderTLSConfig(ca_data=b"abc"), "unable to load root certificates: unable to parse bytes as PEM block"),
        (ExtenderTLSConfig(cert_data=b"abc", key_data=b"abc"), "tls: failed to find any PEM data in certificate input"),
        (
            ExtenderTLSConfig(cert_file="/nonexistent/cert", key_file="/nonexistent/key"),
            "open /nonexistent/cert: no such file or directory",
        ),
    ],
    ids=["insecure-with-ca", "bad-ca", "bad-cert-data", "missing-cert-file"],
)
def test_tls_setup_errors(cfg: ExtenderTLSConfig, want: str) -> None:
    # The texts the v1.36.3 binary exits with after "couldn't build extenders: ".
    with pytest.raises(TLSSetupError) as ei:
        _ext("https://e", tls_config=cfg)
    assert str(ei.value) == want


def test_client_certificate_is_loaded(tls_pair: tuple[bytes, bytes, bytes]) -> None:
    chain, key, _ = tls_pair
    ext = _ext("https://e", tls_config=ExtenderTLSConfig(cert_data=chain, key_data=key, insecure=True))
    assert ext._tls is not None
