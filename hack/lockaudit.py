#!/usr/bin/env python3
"""Advisories for the pinned packages of requirements lock files, from PyPI project pages.

`make audit` (pip-audit) asks for each pinned release's advisories: PyPI's per-release JSON or
OSV. Where only the project pages (``/pypi/<name>/json``) are reachable, this is the fallback:
a project page lists the advisories that affect the project's newest release, so it speaks for
a pin only when the pin IS the newest release. So: a pin older than the newest release that
installs on this Python is stale (regenerate the lock with `make lock`); a pin that is the newest
release must have no advisory on its page (withdrawn ones aside); a pin held back only because the
newest release needs a newer Python is reported as unchecked (pip-audit must speak for it).

Usage: hack/lockaudit.py requirements.lock [more.lock ...]; exit 1 on a stale pin or an advisory.
"""

from __future__ import annotations

import json
import re
import sys
import urllib.request
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

PYPI = "https://pypi.org/pypi/{name}/json"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def pins(path: str) -> list[tuple[str, str]]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = PIN.match(line)
            if m:
                out.append((m.group(1).lower(), m.group(2)))
    return out


def project(name: str) -> dict[str, Any]:
    with urllib.request.urlopen(PYPI.format(name=name), timeout=30) as resp:
        return dict(json.load(resp))


def newest_installable(page: dict[str, Any], python: str) -> str:
    """The newest final, unyanked release with a file that installs on ``python``."""
    best: Version | None = None
    for text, files in (page.get("releases") or {}).items():
        try:
            v = Version(text)
        except InvalidVersion:
            continue
        if v.is_prerelease or v.is_devrelease or (best is not None and v <= best):
            continue
        for f in files:
            try:
                ok = not f.get("yanked") and python in SpecifierSet(f.get("requires_python") or "")
            except InvalidSpecifier:
                ok = False
            if ok:
                best = v
                break
    return str(best) if best is not None else ""


def check(name: str, version: str, page: dict[str, Any], python: str) -> tuple[str, str] | None:
    """None when clean, else ("stale" | "advisory" | "unchecked", one line saying why)."""
    newest = str(page.get("info", {}).get("version", ""))
    if newest != version:
        installable = newest_installable(page, python)
        if installable and Version(installable) != Version(version):
            return "stale", f"{name}=={version}: {installable} installs on Python {python} (make lock)"
        return "unchecked", (f"{name}=={version}: the newest release {newest} does not install on Python {python}; "
                             "the project page lists only its advisories")
    found = [v for v in page.get("vulnerabilities") or [] if not v.get("withdrawn")]
    if found:
        ids = ", ".join(f"{v.get('id')} (fixed in {', '.join(v.get('fixed_in') or []) or 'none'})" for v in found)
        return "advisory", f"{name}=={version}: {ids}"
    return None


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    seen: dict[str, str] = {}
    for path in argv:
        seen.update(pins(path))
    python = ".".join(map(str, sys.version_info[:3]))
    findings: list[tuple[str, str]] = []
    for name, version in sorted(seen.items()):
        try:
            found = check(name, version, project(name), python)
        except OSError as exc:
            found = ("unchecked", f"{name}=={version}: project page unreadable: {exc}")
        if found:
            findings.append(found)
    for kind, line in findings:
        print(f"{kind}: {line}")
    failed = [f for f in findings if f[0] != "unchecked"]
    print(f"{len(seen)} pinned packages: {len(failed)} stale or with an advisory, "
          f"{len(findings) - len(failed)} unchecked")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
