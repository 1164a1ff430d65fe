"""bench/perf_template.py: the Go template subset scheduler_perf's templates use.

Expected values are what Go's template engine with scheduler_perf's getTemplateFuncs
(operations.go) prints for the same actions; the template files are v1.36.3's own.
"""

from __future__ import annotations

import pytest
import yaml

from bench.perf_config import perf_dir
from bench.perf_template import TemplateError, render


@pytest.mark.parametrize(
    ("text", "index", "count", "want"),
    [
        ("name: pod-blocker-{{ .Index }}", 7, 10, "name: pod-blocker-7"),
        ("name: test-claim-{{.Index}}", 0, 1, "name: test-claim-0"),
        # event_handling/templates/podupdate-pod-blocker.yaml: 30000 / Count, int() truncates.
        ("memory: {{ DivideInt 30000 .Count }}Mi", 0, 1000, "memory: 30Mi"),
        ("memory: {{ DivideInt 30000 .Count }}Mi", 0, 7, "memory: 4285Mi"),
        # poddelete-pod-blocker-topology-ports-resources.yaml: hostPort 8{{ Mod .Index 12 }}.
        ("hostPort: 8{{ Mod .Index 12 }}", 13, 20, "hostPort: 81"),
        ("hostPort: 8{{ Mod .Index 12 }}", 11, 20, "hostPort: 811"),
        ("- maxSkew: {{ .Count }}", 3, 42, "- maxSkew: 42"),
        ("resourceClaimName: test-claim-{{DivideInt .Index 5}}", 14, 20, "resourceClaimName: test-claim-2"),
        # Go's % keeps the dividend's sign; int(float64) truncates toward zero.
        ("{{ Mod -7 3 }}", 0, 1, "-1"),
        ("{{ DivideInt -7 2 }}", 0, 1, "-3"),
        ("{{ AddInt .Index .Count 1 }} {{ SubtractInt .Count .Index }} {{ MultiplyInt .Index 2 }}", 3, 5, "9 2 6"),
        ("no actions: {a: {b: c}}", 0, 1, "no actions: {a: {b: c}}"),
    ],
)
def test_render(text: str, index: int, count: int, want: str) -> None:
    assert render(text, {"Index": index, "Count": count}) == want


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{{ AddFloat 1 2 }}", "unsupported function"),
        ("{{ if .Index }}x{{ end }}", "unsupported function or keyword 'if'"),
        ("{{- .Index }}", "trim markers"),
        ("{{ .Index | printf }}", "pipes"),
        ("{{ .Name }}", "field .Name"),
        ("{{ DivideInt 1 0 }}", "division by zero"),
        ("{{ Mod .Index 0 }}", "divide by zero"),
        ("{{ Mod .Index }}", "wants 2 arguments"),
        ("{{ .Index 3 }}", "takes no arguments"),
        ("{{ DivideInt \"a\" 2 }}", "strings"),
        ("{{ .Index ", "unbalanced"),
    ],
)
def test_refused(text: str, fragment: str) -> None:
    with pytest.raises(TemplateError, match=None) as err:
        render(text, {"Index": 1, "Count": 2})
    assert fragment in str(err.value)


def test_upstream_blocker_template() -> None:
    path = perf_dir() / "event_handling" / "templates" / "podupdate-pod-blocker.yaml"
    if not path.is_file():
        pytest.skip("k8s.io/kubernetes@v1.36.3 is not in the Go module cache")
    pod = yaml.safe_load(render(path.read_text(), {"Index": 3, "Count": 1000}))
    assert pod["metadata"]["name"] == "pod-blocker-3"
    assert pod["metadata"]["labels"] == {"color": "green-3", "topology": "blue"}
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": 0.0001, "memory": "30Mi"}
