"""The testing package ships with the scheduler (e2e/ and bench/ use it): it must load without
pytest, and nothing under scheduler/ but tests may depend on it (the import-linter layers say so)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import scheduler.testing


def test_testing_modules_load_without_pytest() -> None:
    names = [f"scheduler.testing.{m.name}" for m in pkgutil.iter_modules(scheduler.testing.__path__)]
    code = "import importlib, sys\n" + "".join(f"importlib.import_module({n!r})\n" for n in names)
    code += "assert 'pytest' not in sys.modules, 'pytest imported'\n"
    subprocess.run([sys.executable, "-c", code], check=True)
    assert "scheduler.testing.builders" in names
