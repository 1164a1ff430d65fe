"""When the CEL evaluator loads: ahead of the first expression (celcache.preload), and never
for driver equalities (celcache.DriverIs). Each case runs in a fresh interpreter: in this one
another test may have loaded the evaluator already."""

from __future__ import annotations

import subprocess
import sys

import pytest

from scheduler.testing.process import scheduler_env

_PRELOAD = """
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


@pytest.mark.parametrize(
    "script",
    [
        pytest.param(_PRELOAD, id="preload-imports-once-off-the-caller"),
        # The usual DeviceClass selector: a cluster with no other keeps cel-python's 11 MB out.
        pytest.param(_DRIVER_ONLY, id="driver-equalities-never-load-it"),
    ],
)
def test_when_the_evaluator_loads(script: str) -> None:
    out = subprocess.run([sys.executable, "-c", script], env=scheduler_env(), capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
