"""The inputs the coverage-guided run (bench/fuzz.py, ``make fuzz``) kept because each reached
code the others did not, replayed as regression cases: every one still ends in exit 0, or exit 2
with one line naming its file, object and field."""

from __future__ import annotations

import pathlib

import pytest

from scheduler.testing.fuzz import refusal_problem, simulate_files, small_world

CORPUS = pathlib.Path(__file__).parent / "corpus"
SMALL = small_world()


def _inputs(target: str) -> list[pathlib.Path]:
    return sorted((CORPUS / target).glob("*"))


def test_corpus_is_kept() -> None:
    assert len(_inputs("config")) >= 20 and len(_inputs("cluster")) >= 20


@pytest.mark.parametrize("path", _inputs("config"), ids=lambda p: p.name[:12])
def test_config_input(path: pathlib.Path) -> None:
    rc, _, err, _, config = simulate_files(SMALL, path.read_bytes())
    assert refusal_problem(rc, err, (config,)) is None, err


@pytest.mark.parametrize("path", _inputs("cluster"), ids=lambda p: p.name[:12])
def test_cluster_input(path: pathlib.Path) -> None:
    rc, _, err, cluster, _ = simulate_files(path.read_bytes())
    assert refusal_problem(rc, err, (cluster,)) is None, err
