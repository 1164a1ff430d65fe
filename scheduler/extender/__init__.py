"""Scheduler extenders over HTTP(S) (upstream pkg/scheduler/extender.go and buildExtenders):
the client that speaks the extender/v1 JSON protocol, built from the configuration's
``extenders`` and handed to the frameworks (core/profiles.py), for ``run`` and ``simulate``.

It sits above the decision core, which only knows the framework's Extender interface: the
core never opens a socket, this package never reaches the API server.
"""

from scheduler.extender.build import ExtenderBuildError, build_extenders
from scheduler.extender.http import HTTPExtender

__all__ = ["ExtenderBuildError", "HTTPExtender", "build_extenders"]
