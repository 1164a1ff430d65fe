"""requirements.lock and requirements-build.lock (the image's hash-checked installs) agree with
pyproject.toml: every declared dependency is pinned at a version its range admits, and every pin
carries hashes. A range moved without `make lock` fails here, not in the image build."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")


def read_lock(path: Path) -> dict[str, tuple[str, int]]:
    """{name: (version, number of sha256 hashes)} of a pip-compile --generate-hashes file."""
    pins: dict[str, tuple[str, int]] = {}
    current = ""
    for line in path.read_text().splitlines():
        m = PIN.match(line)
        if m:
            current = canonicalize_name(m.group(1))
            pins[current] = (m.group(2), 0)
        elif current and line.strip().startswith("--hash=sha256:"):
            version, n = pins[current]
            pins[current] = (version, n + 1)
        elif not line.startswith(" "):
            current = ""
    return pins


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


@pytest.mark.parametrize(
    "lock, requirements",
    [
        pytest.param("requirements.lock", _pyproject()["project"]["dependencies"], id="runtime"),
        pytest.param("requirements-build.lock", _pyproject()["build-system"]["requires"], id="build"),
    ],
)
def test_lock_pins_every_declared_dependency_with_hashes(lock: str, requirements: list[str]) -> None:
    pins = read_lock(ROOT / lock)
    assert pins, f"{lock}: no pins"
    unhashed = sorted(name for name, (_, hashes) in pins.items() if hashes == 0)
    assert not unhashed, f"{lock}: pins without hashes: {unhashed}"
    for text in requirements:
        req = Requirement(text)
        name = canonicalize_name(req.name)
        assert name in pins, f"{lock}: {name} is not pinned (make lock)"
        assert req.specifier.contains(pins[name][0], prereleases=True), (
            f"{lock}: {name}=={pins[name][0]} is outside {req.specifier} (make lock)"
        )


def test_read_lock_counts_hashes_per_pin(tmp_path: Path) -> None:
    lock = tmp_path / "r.lock"
    lock.write_text(
        "# header\n"
        "a-b==1.0 \\\n    --hash=sha256:00 \\\n    --hash=sha256:11\n    # via x\n"
        "c==2.0\n"
        "\n# unsafe\nsetuptools==80 \\\n    --hash=sha256:22\n"
    )
    assert read_lock(lock) == {"a-b": ("1.0", 2), "c": ("2.0", 0), "setuptools": ("80", 1)}
