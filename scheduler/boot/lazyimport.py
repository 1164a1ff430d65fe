"""Deferred loading of the third-party packages whose ``__init__`` only re-exports names.

``import kubernetes.client`` runs ``kubernetes/__init__.py``, which imports ``.dynamic``,
``.stream``, ``.watch``, ``.leaderelection``, ``.informer`` and the rest (since client 37 the
generated ``kubernetes.client`` packages resolve their ~900 names lazily themselves; before, they
imported every API and model module too); ``import kopf`` loads the whole operator framework
(handlers, reactor, admission webhooks). The scheduler uses a handful of those names (kopf's HTTP
client layer; the client's Configuration, ApiClient and a few APIs) but paid for all of them at
every start (kopf itself imports ``kubernetes.client`` just to look for ``V1ObjectMeta``): about
half of the import time, and start-up is what delays the first bind.

``defer_reexports()`` installs an import hook for those packages: their ``__init__`` is read,
not run; each name it would import is imported on first access instead (PEP 562
``__getattr__``). Submodules import as usual (the package keeps its real ``__path__``). An
``__init__`` holding anything but ``from X import Y`` statements and constant dunders
(``__version__``, ``__all__``) runs as usual, so another release is never half loaded.

The same hook makes LAZY_MODULES lazy modules (importlib.util.LazyLoader): the module object
exists at once, its code runs at the first attribute access. Only for a module that nothing
touches until an uncommon path needs it (a GCP kubeconfig), once, from one thread at a time:
Python 3.11's LazyLoader is not safe against two threads' first accesses at once.

And it runs the modules of OPTIONAL_OFF as if some optional dependency of theirs were not
installed: their ``try: import x`` / ``except ImportError`` takes the second branch. Only while
that module runs (at start-up, on the main thread): the dependency stays importable for
anyone else, and a module that turns out to need it (an ImportError naming it) runs again as
usual.

Last, the modules of CALL_THROUGH run with a stub in place of a dependency they import names
from only to call them on a rare path: each name is a function that imports the real one when
called. Also only while that module runs: anyone else imports the real dependency. SHADOWED is
the same for names of a package that resolves them lazily itself (PEP 562): the package is
imported as usual, and only while the module runs do those names stand in its namespace as
call-throughs.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import re
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

# Packages whose __init__ is only re-exports (kubernetes 37, kopf 1.45; checked at load). Client
# 37's kubernetes.client, .client.api and .client.models are lazy by themselves (a TYPE_CHECKING
# block and a module __getattr__): reading them here would only cost an ast.parse of ~8000 lines.
DEFERRED_PACKAGES = (
    "kopf",
    "kubernetes",
)

# Imported by kubernetes.config at its import (where the client's google-auth extra is installed), used
# only by the GCP auth-provider of a kubeconfig:
# the GCP credential chain and, through it, most of the cryptography package.
LAZY_MODULES = ("google.auth.transport.requests", "oauthlib.oauth2")

# Names a module imports from a dependency only to call them on a rare path: while that module
# runs, the dependency is a stub whose names import the real one at their first call. The
# kubeconfig loader's OIDC auth-provider refresh (and with it oauthlib.oauth2, in LAZY_MODULES
# above: the loader only names its errors in an except clause) would otherwise bring requests,
# oauthlib and every codec charset_normalizer registers: about 5 MB and 260 modules at every start.
CALL_THROUGH: dict[str, dict[str, tuple[str, ...]]] = {
    "kubernetes.config.kube_config": {"requests_oauthlib": ("OAuth2Session",)},
}

# Names a module takes from a lazily resolving package only to call them on a rare path. The
# kubeconfig loader names ApiClient for new_client_from_config and its Azure/GCP token refresh; the
# real class imports pydantic for the generated models (about 9 MB, 100 modules) and the scheduler
# reaches the API server through the client's Configuration and urllib3 layer (kube/clients.py).
SHADOWED: dict[str, dict[str, tuple[str, ...]]] = {
    "kubernetes.config.kube_config": {"kubernetes.client": ("ApiClient",)},
}

# Optional dependencies switched off for one module: structlog's console renderer and its
# traceback helper use rich where it is installed (development environments: rich is no
# requirement of ours). The scheduler renders JSON or klog lines with plain tracebacks and never
# uses them: rich and what it imports (pygments, importlib.metadata) cost about 4 MB and 70 modules.
OPTIONAL_OFF: dict[str, tuple[str, ...]] = {
    "structlog.dev": ("rich",),
    "structlog.tracebacks": ("rich",),
    # kopf recognises the client's model objects where the client is installed; the scheduler
    # hands it dicts only, and the first model class would bring pydantic (see SHADOWED).
    "kopf._cogs.helpers.thirdparty": ("kubernetes.client.models.v1_object_meta",),
}

_DOCSTRING = re.compile(r'^\s*(?:#[^\n]*\n|\s)*(?:"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\')', re.MULTILINE)
_FROM_IMPORT = re.compile(r"^from\s+(\.*)([\w.]*)\s+import\s+(\w+)(?:\s+as\s+(\w+))?\s*$")
_DUNDER = re.compile(r"^(__\w+__)\s*=\s*(.+)$")


Exports = dict[str, tuple[str, str | None]]


def _export(exports: Exports, package: str, level: int, module: str, name: str, alias: str | None) -> None:
    if level:
        base = package.rsplit(".", level - 1)[0] if level > 1 else package
        module = f"{base}.{module}" if module else base
    if module == package:
        exports[alias or name] = (f"{package}.{name}", None)  # "from . import client": a submodule
    else:
        exports[alias or name] = (module, name)


def _parse_lines(source: str, package: str) -> tuple[Exports, dict[str, Any]] | None:
    # The generated client's one-import-per-line files, several times faster than ast.parse.
    m = _DOCSTRING.match(source)
    body = source[m.end():] if m else source
    exports: Exports = {}
    dunders: dict[str, Any] = {}
    for raw in body.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith("from __future__ import"):
            continue
        dm = _DUNDER.match(line)
        if dm is not None:
            try:
                dunders[dm.group(1)] = ast.literal_eval(dm.group(2))
            except (ValueError, SyntaxError):
                return None
            continue
        im = _FROM_IMPORT.match(line)
        if im is None:
            return None
        dots, mod, name, alias = im.groups()
        _export(exports, package, len(dots), mod, name, alias)
    return exports, dunders


def _parse_tree(source: str, package: str) -> tuple[Exports, dict[str, Any]] | None:
    # Any other layout of the same statements (parenthesised imports, a literal __all__).
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    exports: Exports = {}
    dunders: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # the docstring
        if isinstance(node, ast.ImportFrom):
            if node.module == "__future__":
                continue
            for a in node.names:
                if a.name == "*":
                    return None
                _export(exports, package, node.level, node.module or "", a.name, a.asname)
            continue
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id.startswith("__") and node.targets[0].id.endswith("__")):
            try:
                dunders[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                return None
            continue
        return None
    return exports, dunders


def parse_exports(source: str, package: str) -> tuple[Exports, dict[str, Any]] | None:
    """``{exported name: (module, attribute or None for the module itself)}`` and the constant
    dunders (``__version__ = "37.0.2"``, ``__all__``) of an ``__init__`` that holds nothing but
    ``from ... import ...`` statements; None if it holds anything else."""
    return _parse_lines(source, package) or _parse_tree(source, package)


class _DeferredExportsLoader(importlib.abc.Loader):
    def __init__(self, real: Any, path: str) -> None:
        self.real = real
        self.path = path

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.real, attr)  # get_data, is_package, resource readers: the real loader's

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # the default module object

    def exec_module(self, module: ModuleType) -> None:
        name = module.__name__
        try:
            with open(self.path, encoding="utf-8") as f:
                parsed = parse_exports(f.read(), name)
        except OSError:
            parsed = None
        if parsed is None:
            self.real.exec_module(module)
            return
        exports, dunders = parsed
        module.__dict__.update(dunders)

        def __getattr__(attr: str) -> Any:
            target = exports.get(attr)
            if target is None:
                raise AttributeError(f"module {name!r} has no attribute {attr!r}")
            mod = importlib.import_module(target[0])
            if target[1] is None:
                value: Any = mod
            elif hasattr(mod, target[1]):
                value = getattr(mod, target[1])
            else:  # "from pkg import submodule", as the import statement resolves it
                value = importlib.import_module(f"{target[0]}.{target[1]}")
            setattr(module, attr, value)
            return value

        def __dir__() -> list[str]:
            return sorted(set(module.__dict__) | set(exports))

        module.__getattr__ = __getattr__  # type: ignore[method-assign]
        module.__dir__ = __dir__  # type: ignore[method-assign]
        # "from pkg import *" imported every name before; with __all__ it still does.
        module.__dict__.setdefault("__all__", [n for n in exports if not n.startswith("_")])


class _WrappingLoader(importlib.abc.Loader):
    """A module's own loader with another exec_module (the subclasses')."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.real, attr)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.real.create_module(spec)


class _OptionalOffLoader(_WrappingLoader):
    """Runs a module with ``hidden`` (those not imported yet) not importable, then as usual if
    it raised an ImportError for one of them."""

    def __init__(self, real: Any, hidden: tuple[str, ...]) -> None:
        super().__init__(real)
        self.hidden = hidden

    def exec_module(self, module: ModuleType) -> None:
        hidden = [n for n in self.hidden if n not in sys.modules]
        for n in hidden:
            sys.modules[n] = None  # type: ignore[assignment]  # the import system's "not installed"
        try:
            self.real.exec_module(module)
            return
        except ImportError as exc:
            if exc.name not in hidden:
                raise
        finally:
            for n in hidden:
                if n in sys.modules and sys.modules[n] is None:
                    del sys.modules[n]
        self.real.exec_module(module)  # it needs one after all: as if there were no hook


def _call_through(module: str, name: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


class _CallThroughLoader(_WrappingLoader):
    """Runs a module with each of ``stubs`` (a dependency not imported yet -> the names it
    takes from it) replaced by a stub module whose names import the real one when called, and
    each of ``shadowed`` (a lazily resolving package -> names) imported, those of its names it
    has not resolved yet standing in its namespace as call-throughs."""

    def __init__(self, real: Any, stubs: dict[str, tuple[str, ...]],
                 shadowed: dict[str, tuple[str, ...]] | None = None) -> None:
        super().__init__(real)
        self.stubs = stubs
        self.shadowed = shadowed or {}

    def exec_module(self, module: ModuleType) -> None:
        shadows: list[tuple[ModuleType, str, Any]] = []
        for dep, names in self.shadowed.items():
            pkg = importlib.import_module(dep)
            for name in names:
                if name not in pkg.__dict__:
                    stand_in = _call_through(dep, name)
                    pkg.__dict__[name] = stand_in
                    shadows.append((pkg, name, stand_in))
        try:
            self._exec_stubbed(module)
        finally:
            for pkg, name, stand_in in shadows:
                if pkg.__dict__.get(name) is stand_in:
                    del pkg.__dict__[name]  # the package's own __getattr__ resolves it again

    def _exec_stubbed(self, module: ModuleType) -> None:
        placed: dict[str, ModuleType] = {}
        for dep, names in self.stubs.items():
            if dep in sys.modules:
                continue  # already loaded: nothing to save
            stub = ModuleType(dep, f"call-through stub of {dep} for {module.__name__}")
            for name in names:
                setattr(stub, name, _call_through(dep, name))
            sys.modules[dep] = placed[dep] = stub
        try:
            self.real.exec_module(module)
        finally:
            for dep, stub in placed.items():
                if sys.modules.get(dep) is stub:
                    del sys.modules[dep]


def _wrapped(
    fullname: str, path: Any, wrap: Callable[[Any], importlib.abc.Loader]
) -> importlib.machinery.ModuleSpec | None:
    """The module's spec as the path finders give it, its loader wrapped by ``wrap``."""
    spec = importlib.machinery.PathFinder.find_spec(fullname, path)
    if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
        spec.loader = wrap(spec.loader)
    return spec


class DeferredExportsFinder(importlib.abc.MetaPathFinder):
    """Import hook: ``packages`` (full names) get their ``__init__`` deferred as described above;
    ``lazy_modules`` run on their first attribute access (importlib.util.LazyLoader);
    ``optional_off`` modules run without the optional dependencies named; ``call_through`` modules
    run with stubs of the dependencies named (CALL_THROUGH) and call-throughs of the package names
    named (SHADOWED)."""

    def __init__(
        self, packages: tuple[str, ...], lazy_modules: tuple[str, ...] = (),
        optional_off: dict[str, tuple[str, ...]] | None = None,
        call_through: dict[str, dict[str, tuple[str, ...]]] | None = None,
        shadowed: dict[str, dict[str, tuple[str, ...]]] | None = None,
    ) -> None:
        self.packages = frozenset(packages)
        self.lazy_modules = frozenset(lazy_modules)
        self.optional_off = dict(optional_off or {})
        self.call_through = dict(call_through or {})
        self.shadowed = dict(shadowed or {})

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        stubs = self.call_through.get(fullname)
        shadowed = self.shadowed.get(fullname)
        if stubs is not None or shadowed is not None:
            return _wrapped(fullname, path, lambda real: _CallThroughLoader(real, stubs or {}, shadowed))
        hidden = self.optional_off.get(fullname)
        if hidden is not None:
            return _wrapped(fullname, path, lambda real: _OptionalOffLoader(real, hidden))
        if fullname in self.lazy_modules:
            return _wrapped(fullname, path, importlib.util.LazyLoader)
        if fullname not in self.packages:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not spec.origin or not spec.origin.endswith("__init__.py"):
            return spec
        spec.loader = _DeferredExportsLoader(spec.loader, spec.origin)
        return spec


def defer_reexports() -> bool:
    """Install the hook for DEFERRED_PACKAGES, LAZY_MODULES, OPTIONAL_OFF, CALL_THROUGH and
    SHADOWED unless one of
    DEFERRED_PACKAGES is already imported (it would then be imported whole anyway). Returns
    whether the hook is active."""
    if any(isinstance(f, DeferredExportsFinder) for f in sys.meta_path):
        return True
    if any(p in sys.modules for p in DEFERRED_PACKAGES):
        return False
    sys.meta_path.insert(0, DeferredExportsFinder(DEFERRED_PACKAGES, LAZY_MODULES, OPTIONAL_OFF, CALL_THROUGH,
                                                    SHADOWED))
    return True
