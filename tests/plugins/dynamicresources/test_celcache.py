"""The CEL evaluator loaded ahead of the first expression (celcache.preload)."""

from __future__ import annotations

import subprocess
import sys

from scheduler.testing.process import scheduler_env

# A fresh interpreter: in this one another test may have loaded the evaluator already.
_SCRIPT = """
import sys, threading
from scheduler.plugins.dynamicresources import celcache
mod = "scheduler.plugins.dynamicresources.cel"
assert mod not in sys.modules, "loaded before preload"
assert celcache.preload() is True
assert celcache.preload() is False  # once
for t in threading.enumerate():
    if t.name == "cel-preload":
        t.join(60)
assert mod in sys.modules
assert celcache.preload() is False
print("ok")
"""


def test_preload_imports_the_evaluator_once_off_the_caller() -> None:
    out = subprocess.run([sys.executable, "-c", _SCRIPT], env=scheduler_env(), capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


_DRIVER_ONLY = """
import sys
from scheduler.plugins.dynamicresources.celcache import CelCache
c = CelCache()
e = c.get_or_compile('device.driver == "gpu.example.com"')
assert e.error is None
assert e.device_matches("gpu.example.com", None) and not e.device_matches("other", None)
assert "scheduler.plugins.dynamicresources.cel" not in sys.modules and "celpy" not in sys.modules
c.get_or_compile("device.attributes['gpu.example.com'].model == 'a'")
assert "celpy" in sys.modules
print("ok")
"""


def test_driver_equalities_never_load_the_interpreter() -> None:
    # The usual DeviceClass selector: a cluster with no other keeps cel-python's 11 MB out.
    out = subprocess.run([sys.executable, "-c", _DRIVER_ONLY], env=scheduler_env(), capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
