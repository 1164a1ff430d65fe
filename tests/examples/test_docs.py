"""The user docs stay true to the tree: every path they name exists, every link and anchor
resolves, and every complete configuration the configuration reference shows loads."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from scheduler.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP = ("scheduler", "tests", "e2e", "bench", "examples", "manifests", "docs")
# A backticked repository path: directories end with "/", files with an extension we keep.
PATH = re.compile(r"`([\w.\-]+(?:/[\w.\-]+)*(?:/|\.(?:py|yaml|toml|md|sh)))`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+)$", re.M)
FENCE = re.compile(r"^```.*?^```$", re.S | re.M)


def _prose(page: Path) -> str:
    return FENCE.sub("", page.read_text(encoding="utf-8"))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def _exists(token: str) -> bool:
    # architecture.md names modules inside scheduler/ without the prefix (`core/cycle.py`).
    return (ROOT / token).exists() or (ROOT / "scheduler" / token).exists()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_named_paths_exist(page: Path) -> None:
    missing = []
    for token in PATH.findall(_prose(page)):
        first = token.split("/", 1)[0]
        if "/" not in token.rstrip("/") and first not in TOP and not token.endswith(".py"):
            continue  # a bare file name of something else (`config.yaml` of a ConfigMap)
        if not _exists(token):
            missing.append(token)
    assert not missing, f"{page.name} names paths that do not exist: {missing}"


def test_architecture_names_every_package() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    packages = [p.name for p in (ROOT / "scheduler").iterdir() if (p / "__init__.py").exists()]
    assert packages
    for name in packages:
        assert f"`scheduler/{name}/`" in text, name


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_resolve(page: Path) -> None:
    anchors = {p: {_slug(h) for h in HEADING.findall(_prose(p))} for p in PAGES}
    for target in LINK.findall(_prose(page)):
        if target.startswith(("http://", "https://")):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.name}: broken link {target}"
        if anchor:
            assert anchor in anchors.get(dest, set()), f"{page.name}: no heading for #{anchor} in {dest.name}"


def _configurations() -> list[str]:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    return [b for b in re.findall(r"^```yaml\n(.*?)^```$", text, re.S | re.M) if b.startswith("apiVersion:")]


@pytest.mark.parametrize("body", _configurations(), ids=lambda b: "")
def test_configuration_examples_load(body: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Through the command line: decoding, defaults, validation and every plugin's args.
    config, cluster = tmp_path / "config.yaml", tmp_path / "cluster.yaml"
    config.write_text(body, encoding="utf-8")
    cluster.write_text("apiVersion: v1\nkind: List\nitems: []\n", encoding="utf-8")
    code = cli_main(["simulate", "--cluster", str(cluster), "--config", str(config)])
    assert code == 0, capsys.readouterr().err


def _tree_paths() -> list[str]:
    """The files and packages the tree block of architecture.md lists, as paths from the root."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = re.search(r"^## The tree$.*?^```text\n(.*?)^```$", text, re.S | re.M)
    assert block is not None
    token = re.compile(r"^[\w.]+(?:\.py|/)$")
    stack: list[str] = []
    out: list[str] = []
    for line in block.group(1).splitlines():
        level = (len(line) - len(line.lstrip())) // 2
        words = line.split()
        paths = list(itertools.takewhile(token.match, words))  # the description follows them
        parent = stack[level - 1] if level else ""
        out += [parent + p for p in paths]
        heading = bool(paths) and paths[0] == words[0] and words[0].endswith("/")
        if heading and (len(words) > len(paths) or len(words) == 1):
            del stack[level:]
            stack.append(parent + words[0])  # a package with its description: its modules follow
    return out


def test_the_tree_lists_what_exists() -> None:
    paths = _tree_paths()
    assert "scheduler/core/cycle.py" in paths
    assert [p for p in paths if not (ROOT / p).exists()] == []


def test_architecture_names_real_classes() -> None:
    text = _prose(ROOT / "docs" / "architecture.md")
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "scheduler").rglob("*.py"))
    for name in set(re.findall(r"`([A-Z][A-Za-z]+)`", text)):
        assert re.search(rf"^class {name}\b", source, re.M), name
