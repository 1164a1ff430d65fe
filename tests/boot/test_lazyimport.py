"""The deferred ``__init__`` of the kubernetes client's re-export packages (scheduler.boot.lazyimport).

The shapes below are the lines of kubernetes 37.0.2's ``kubernetes/__init__.py`` (import-only: read,
not run) and ``kubernetes/client/__init__.py`` (lazy by itself since client 37: left to run), and
kopf 1.45's ``kopf/__init__.py``.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scheduler.boot.lazyimport import DeferredExportsFinder, parse_exports

GENERATED_HEAD = '''# coding: utf-8

# flake8: noqa

"""
    Kubernetes

    The version of the OpenAPI document: release-1.37
    Do not edit the class manually.
"""  # noqa: E501


'''

# kubernetes 37.0.2's kubernetes/client/__init__.py, cut to one name per part: the generator's own
# lazy exports (typing-only imports, a module __getattr__).
CLIENT_37_INIT = GENERATED_HEAD + '''__version__ = "37.0.2"

# Define package exports
__all__ = [
    "CoreV1Api",
]

import typing as _typing

if _typing.TYPE_CHECKING:
    # import apis into sdk package
    from kubernetes.client.api.core_v1_api import CoreV1Api as CoreV1Api

else:
    from importlib import import_module

    _exports = {
        "CoreV1Api": ".api.core_v1_api",
    }

    def __getattr__(name: str) -> object:
        if (module_name := _exports.get(name)) is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(import_module(module_name, __name__), name)
        globals()[name] = value
        return value
'''

# kubernetes 37.0.2's kubernetes/__init__.py after its licence header.
TOP_37_INIT = '''# Licensed under the Apache License, Version 2.0 (the "License");

__project__ = 'kubernetes'
# The version is auto-updated. Please do not edit.
__version__ = "37.0.2"

from . import client
from . import config
from . import dynamic
from . import watch
from . import stream
from . import utils
from . import leaderelection
from . import informer
'''
TOP_37_SUBMODULES = ("client", "config", "dynamic", "watch", "stream", "utils", "leaderelection", "informer")


@pytest.mark.parametrize(
    "package, source, exports, dunders",
    [
        pytest.param(
            "kubernetes",
            TOP_37_INIT,
            {name: (f"kubernetes.{name}", None) for name in TOP_37_SUBMODULES},
            {"__project__": "kubernetes", "__version__": "37.0.2"},
            id="top-package-relative-submodules",
        ),
        pytest.param(
            "pkg",
            GENERATED_HEAD + '__version__ = "1.0"\n\n# import apis into sdk package\n'
            "from pkg.api.core_v1_api import CoreV1Api\n"
            "from pkg.models.v1_pod import V1Pod\n",
            {"CoreV1Api": ("pkg.api.core_v1_api", "CoreV1Api"), "V1Pod": ("pkg.models.v1_pod", "V1Pod")},
            {"__version__": "1.0"},
            id="generated-docstring-then-absolute-from-imports",
        ),
        pytest.param(
            "kopf",
            '"""\nThe main Kopf module.\n"""\n# isort: skip_file\n\n'
            "from kopf import (\n    on,  # as a separate name\n)\n"
            "from kopf._cogs.configs.configuration import (\n    OperatorSettings,\n)\n"
            "__all__ = [\n    'on', 'OperatorSettings',\n]\n",
            {"on": ("kopf.on", None), "OperatorSettings": ("kopf._cogs.configs.configuration", "OperatorSettings")},
            {"__all__": ["on", "OperatorSettings"]},
            id="kopf-init-parenthesised-imports-and-all",
        ),
        pytest.param(
            "a.b",
            "from .c import D as E\nfrom .. import f\n",
            {"E": ("a.b.c", "D"), "f": ("a", "f")},
            {},
            id="relative-module-alias-and-parent",
        ),
    ],
)
def test_import_only_init_is_read_not_run(
    package: str, source: str, exports: dict[str, tuple[str, str | None]], dunders: dict[str, str]
) -> None:
    assert parse_exports(source, package) == (exports, dunders)


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("import os", id="plain-import"),
        pytest.param("from x import *", id="star-import"),
        pytest.param("if True:\n    pass", id="statement"),
        pytest.param("__version__ = get_version()", id="computed-dunder"),
        pytest.param("X = 1", id="plain-assignment"),
    ],
)
def test_init_with_anything_else_runs_as_usual(line: str) -> None:
    assert parse_exports(GENERATED_HEAD + "from a.b import C\n" + line + "\n", "pkg") is None


def test_client_37_init_is_left_to_its_own_lazy_exports() -> None:
    # Its TYPE_CHECKING block and __getattr__ are code: the hook must not replace them.
    assert parse_exports(CLIENT_37_INIT, "kubernetes.client") is None


def _package(root: Path, name: str, init: str, modules: dict[str, str]) -> None:
    d = root / name
    d.mkdir()
    (d / "__init__.py").write_text(textwrap.dedent(init))
    for mod, text in modules.items():
        (d / f"{mod}.py").write_text(textwrap.dedent(text))


@pytest.fixture
def hooked(tmp_path: Path):
    """tmp_path on sys.path with the hook for the packages "lazypkg" and "eagerpkg"."""
    finder = DeferredExportsFinder(("lazypkg", "eagerpkg"))
    sys.path.insert(0, str(tmp_path))
    sys.meta_path.insert(0, finder)
    yield tmp_path
    sys.meta_path.remove(finder)
    sys.path.remove(str(tmp_path))
    for name in [m for m in sys.modules if m.split(".")[0] in ("lazypkg", "eagerpkg")]:
        del sys.modules[name]


def test_names_import_on_first_access(hooked: Path) -> None:
    _package(hooked, "lazypkg", '''\
        __version__ = "1.0"
        from lazypkg.heavy import Heavy
        from lazypkg.other import Other as Renamed
        from . import sub
    ''', {"heavy": "class Heavy: pass\n", "other": "class Other: pass\n", "sub": "X = 1\n"})
    import lazypkg

    assert lazypkg.__version__ == "1.0"
    assert "lazypkg.heavy" not in sys.modules
    assert lazypkg.Heavy.__module__ == "lazypkg.heavy"
    assert "lazypkg.heavy" in sys.modules and "lazypkg.other" not in sys.modules
    from lazypkg import Renamed, sub

    assert Renamed.__name__ == "Other" and sub.X == 1
    assert {"Heavy", "Renamed", "sub"} <= set(dir(lazypkg))
    with pytest.raises(AttributeError):
        _ = lazypkg.Missing
    with pytest.raises(ImportError):
        from lazypkg import Missing  # noqa: F401


def test_init_that_is_not_import_only_runs_eagerly(hooked: Path) -> None:
    _package(hooked, "eagerpkg", '''\
        from eagerpkg.heavy import Heavy
        LOADED = True
    ''', {"heavy": "class Heavy: pass\n"})
    import eagerpkg

    assert eagerpkg.LOADED is True
    assert "eagerpkg.heavy" in sys.modules


_CLIENT_PROBE = """
import json, sys
if sys.argv[1] == "deferred":
    from scheduler.boot.lazyimport import defer_reexports
    assert defer_reexports()
import kopf  # kopf reads two model classes from kubernetes.client at import
from kubernetes import client, config
loaded_after_kopf = sorted(m for m in sys.modules if m.startswith("kubernetes."))
pydantic_loaded = "pydantic" in sys.modules
# The kubeconfig loader's ApiClient (new_client_from_config) is still the client's class when called.
loader_client = type(config.kube_config.ApiClient(configuration=client.Configuration())).__name__
oauth_loaded = sorted(m for m in ("requests", "requests_oauthlib", "oauthlib.oauth2.rfc6749") if m in sys.modules)
# The OIDC refresh's names still work when called (the session) or read (the error class).
session = type(config.kube_config.OAuth2Session(client_id="probe")).__module__
oidc_error = config.kube_config.oauthlib.oauth2.rfc6749.errors.InvalidClientIdError.__name__
gcp_loaded = "google.oauth2.service_account" in sys.modules
# google-auth is the client's optional extra since 37: the chain exists only where it is installed.
gcp_available = config.kube_config.google_auth_available
gcp_request = config.kube_config.google.auth.transport.requests.Request.__name__ if gcp_available else None
settings = kopf.OperatorSettings()  # what the watcher takes from kopf's top level
info = kopf.ConnectionInfo(server="https://127.0.0.1:6443")
kopf_loaded = sum(m.startswith("kopf.") for m in sys.modules)
api = client.CoreV1Api(client.ApiClient(client.Configuration()))
names = {n: getattr(client, n).__module__ + "." + getattr(client, n).__name__
         for n in dir(client) if n[:1].isupper()}
kopf_names = {n: getattr(kopf, n).__class__.__name__ for n in kopf.__all__}
print(json.dumps({"loaded": loaded_after_kopf, "kopf_loaded": kopf_loaded, "kopf_names": kopf_names,
                  "gcp_loaded": gcp_loaded, "gcp_request": gcp_request, "gcp_available": gcp_available,
                  "names": names, "config": config.load_kube_config.__module__,
                  "oauth_loaded": oauth_loaded, "pydantic_loaded": pydantic_loaded, "loader_client": loader_client,
                  "session": session, "oidc_error": oidc_error,
                  "same_pod": client.V1Pod is client.models.V1Pod, "version": client.__version__}))
"""


def test_kopf_and_the_client_resolve_every_name_they_exported() -> None:
    # The real package, both ways, in fresh interpreters.
    def probe(mode: str) -> dict:
        out = subprocess.run([sys.executable, "-c", _CLIENT_PROBE, mode], capture_output=True, text=True,
                             check=True, timeout=120)
        return json.loads(out.stdout)

    eager, deferred = probe("eager"), probe("deferred")
    assert deferred["names"] == eager["names"] and len(eager["names"]) > 700
    assert deferred["config"] == eager["config"] == "kubernetes.config.kube_config"
    assert deferred["same_pod"] and deferred["version"] == eager["version"]
    assert deferred["kopf_names"] == eager["kopf_names"]
    # kubernetes/__init__ imports every subpackage; deferred, only those used are loaded.
    unused = {f"kubernetes.{p}" for p in ("dynamic", "watch", "stream", "leaderelection", "informer")}
    assert unused <= set(eager["loaded"])
    assert not unused & set(deferred["loaded"])
    assert len(deferred["loaded"]) < len(eager["loaded"])
    # The generated client resolves its names lazily by itself (why DEFERRED_PACKAGES leaves it
    # out): kopf's two model classes load a handful of model modules, not the ~900.
    for loaded in (eager["loaded"], deferred["loaded"]):
        assert sum(m.startswith(("kubernetes.client.models.", "kubernetes.client.api.")) for m in loaded) < 10
    # kopf's model-class check and the kubeconfig loader's ApiClient name bring pydantic (the
    # generated models') only eagerly; the loader's name still gives the real class.
    assert eager["pydantic_loaded"] and not deferred["pydantic_loaded"]
    assert deferred["loader_client"] == eager["loader_client"] == "ApiClient"
    # The kubeconfig loader's OIDC refresh brings requests and oauthlib only when it runs.
    assert eager["oauth_loaded"] == ["oauthlib.oauth2.rfc6749", "requests", "requests_oauthlib"]
    assert deferred["oauth_loaded"] == []
    assert deferred["session"] == eager["session"] == "requests_oauthlib.oauth2_session"
    assert deferred["oidc_error"] == eager["oidc_error"] == "InvalidClientIdError"
    # The watcher's part of kopf, not its operator machinery.
    assert eager["kopf_loaded"] > 70
    assert deferred["kopf_loaded"] < 30
    # kubernetes.config's GCP credential chain (and cryptography) waits for a GCP kubeconfig.
    assert deferred["gcp_available"] == eager["gcp_available"]
    assert eager["gcp_loaded"] == eager["gcp_available"] and not deferred["gcp_loaded"]
    if eager["gcp_available"]:
        assert deferred["gcp_request"] == eager["gcp_request"] == "Request"  # still there on use


# Modules that try an optional dependency, as structlog.dev does with rich.
_OPTIONAL_USERS = {
    "soft": "try:\n    import optdep\nexcept ImportError:\n    optdep = None\n",
    "hard": "import optdep\n",  # needs it after all: runs again as usual
}


@pytest.mark.parametrize(
    "user, imported_before, sees_it",
    [
        pytest.param("soft", False, False, id="optional-dependency-switched-off"),
        pytest.param("soft", True, True, id="already-imported-stays-visible"),
        pytest.param("hard", False, True, id="required-dependency-runs-as-usual"),
    ],
)
def test_optional_dependency_is_off_only_for_the_module_named(
    tmp_path: Path, user: str, imported_before: bool, sees_it: bool
) -> None:
    (tmp_path / "optdep.py").write_text("X = 1\n")
    (tmp_path / f"{user}.py").write_text(_OPTIONAL_USERS[user])
    finder = DeferredExportsFinder((), optional_off={user: ("optdep",)})
    sys.path.insert(0, str(tmp_path))
    sys.meta_path.insert(0, finder)
    try:
        if imported_before:
            import optdep  # noqa: F401
        mod = importlib.import_module(user)
        assert (mod.optdep is not None) == sees_it
        assert ("optdep" in sys.modules) == sees_it
        # Off for that module only: anyone else still imports it.
        assert importlib.import_module("optdep").X == 1
    finally:
        sys.meta_path.remove(finder)
        sys.path.remove(str(tmp_path))
        for name in (user, "optdep"):
            sys.modules.pop(name, None)


@pytest.mark.parametrize("imported_before", [False, True], ids=["stubbed", "already-imported-real"])
def test_call_through_names_import_the_dependency_when_called(tmp_path: Path, imported_before: bool) -> None:
    (tmp_path / "heavydep.py").write_text("LOADS = [1]\ndef Session(x):\n    return ('real', x)\n")
    (tmp_path / "user.py").write_text("from heavydep import Session\n")
    finder = DeferredExportsFinder((), call_through={"user": {"heavydep": ("Session",)}})
    sys.path.insert(0, str(tmp_path))
    sys.meta_path.insert(0, finder)
    try:
        if imported_before:
            import heavydep  # noqa: F401
        mod = importlib.import_module("user")
        # Stubbed: the dependency is not loaded, nor left behind as the stub.
        assert ("heavydep" in sys.modules) == imported_before
        assert mod.Session(2) == ("real", 2)
        assert "heavydep" in sys.modules and sys.modules["heavydep"].LOADS == [1]
    finally:
        sys.meta_path.remove(finder)
        sys.path.remove(str(tmp_path))
        for name in ("user", "heavydep"):
            sys.modules.pop(name, None)


_LOG_PROBE = """
import io, json, sys
from scheduler.boot.lazyimport import defer_reexports
assert defer_reexports()
import structlog
from scheduler.live import log
stream = io.StringIO()
log.configure("INFO", json_output=True, stream=stream)
try:
    raise ValueError("boom")
except ValueError:
    structlog.get_logger("probe").exception("failed")
line = json.loads(stream.getvalue().splitlines()[-1])
print(json.dumps({"rich": "rich" in sys.modules, "traceback": line.get("exception", "")}))
"""


def test_structlog_logs_tracebacks_without_rich() -> None:
    # The scheduler's own renderers: a plain traceback, with rich installed or not.
    out = subprocess.run([sys.executable, "-c", _LOG_PROBE], capture_output=True, text=True, check=True, timeout=60)
    got = json.loads(out.stdout)
    assert not got["rich"]
    assert got["traceback"].startswith("Traceback (most recent call last):") and "ValueError: boom" in got["traceback"]


# A package that resolves its names lazily (PEP 562), as kubernetes.client does since client 37.
_LAZY_PACKAGE = """
import importlib
def __getattr__(name):
    if name in ("Heavy", "Light"):
        value = getattr(importlib.import_module("lazydep." + name.lower()), name)
        globals()[name] = value
        return value
    raise AttributeError(name)
"""


@pytest.mark.parametrize("resolved_before", [False, True], ids=["shadowed", "already-resolved-real"])
def test_shadowed_names_resolve_when_called(tmp_path: Path, resolved_before: bool) -> None:
    pkg = tmp_path / "lazydep"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(_LAZY_PACKAGE)
    (pkg / "heavy.py").write_text("class Heavy:\n    def __init__(self, x):\n        self.x = x\n")
    (pkg / "light.py").write_text("class Light:\n    pass\n")
    (tmp_path / "user.py").write_text("from lazydep import Heavy, Light\n")
    finder = DeferredExportsFinder((), shadowed={"user": {"lazydep": ("Heavy",)}})
    sys.path.insert(0, str(tmp_path))
    sys.meta_path.insert(0, finder)
    try:
        if resolved_before:
            import lazydep

            _ = lazydep.Heavy
        mod = importlib.import_module("user")
        # Only the shadowed name waits; the others resolve as usual.
        assert ("lazydep.heavy" in sys.modules) == resolved_before
        assert mod.Light.__module__ == "lazydep.light"
        made = mod.Heavy(2)
        assert type(made).__module__ == "lazydep.heavy" and made.x == 2
        # The stand-in is gone from the package: anyone else gets the real class.
        assert sys.modules["lazydep"].Heavy is type(made)
    finally:
        sys.meta_path.remove(finder)
        sys.path.remove(str(tmp_path))
        for name in ("user", "lazydep", "lazydep.heavy", "lazydep.light"):
            sys.modules.pop(name, None)
