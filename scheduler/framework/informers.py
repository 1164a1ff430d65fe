"""Informers for the kinds a plugin names (upstream: the Handle's SharedInformerFactory, and the
dynamic informers kube-scheduler starts for events registered on ``<plural>.<version>.<group>``).

A plugin asks for a resource when it is built (``handle.shared_informer_factory.for_resource``)
or registers a cluster event on one (``ClusterEvent("configmaps.v1.", ...)``); either way the
live scheduler lists and watches it with its own watch machinery, fills the informer's store,
calls the plugin's event handlers and moves the pods those events may help. ``simulate`` fills
the store from the cluster file. Objects are the API's JSON as decoded (read them, do not change
them). Pure: the edge delivers the events, in its one thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import structlog

from scheduler.model.kinds import Raw, metadata

log = structlog.get_logger(__name__)

DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class GroupVersionResource:
    """An API resource: group ("" for the core group), version and plural name."""

    group: str
    version: str
    resource: str

    @classmethod
    def parse(cls, text: str) -> GroupVersionResource:
        """``<plural>.<version>.<group>`` (upstream schema.ParseResourceArg with three parts):
        "configmaps.v1." is the core group's ConfigMaps, "foos.v1.example.com" a custom one."""
        if text.count(".") < 2:
            raise ValueError(f"resource {text!r}: want <plural>.<version>.<group>, e.g. configmaps.v1.")
        resource, version, group = text.split(".", 2)
        if not resource or not version:
            raise ValueError(f"resource {text!r}: want <plural>.<version>.<group>, e.g. configmaps.v1.")
        return cls(group, version, resource)

    def __str__(self) -> str:
        # The form cluster events name it by.
        return f"{self.resource}.{self.version}.{self.group}"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def path(self) -> str:
        """The collection's URL path: /api/v1/configmaps, /apis/example.com/v1/foos."""
        root = "/apis/" if self.group else "/api/"
        return f"{root}{self.api_version}/{self.resource}"


def is_resource_event(resource: str) -> bool:
    """Whether a registered event's resource names a GVR (kube-scheduler's own kinds do not)."""
    return resource.count(".") >= 2


def guess_resource(api_version: str, kind: str) -> GroupVersionResource:
    """The plural resource of a kind, guessed as client-go does without discovery
    (meta.UnsafeGuessKindToResource): lower case, then "es" after s, "ies" for y, else "s"."""
    group, _, version = api_version.rpartition("/")
    name = kind.lower()
    if name.endswith("endpoints"):
        plural = name
    elif name.endswith("s"):
        plural = name + "es"
    elif name.endswith("y"):
        plural = name[:-1] + "ies"
    else:
        plural = name + "s"
    return GroupVersionResource(group, version, plural)


def object_key(raw: Raw) -> str:
    """namespace/name, or name for a cluster-scoped object (client-go's MetaNamespaceKeyFunc)."""
    meta = metadata(raw)
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name', '')}" if ns else str(meta.get("name", ""))


AddFunc = Callable[[Raw], None]
UpdateFunc = Callable[[Raw, Raw], None]
DeleteFunc = Callable[[Raw], None]


@dataclass(frozen=True, slots=True)
class ResourceEventHandlerFuncs:
    """What a plugin is told of its kind's objects (client-go ResourceEventHandlerFuncs)."""

    add_func: AddFunc | None = None
    update_func: UpdateFunc | None = None
    delete_func: DeleteFunc | None = None


class Lister:
    """Reads of an informer's store (client-go GenericLister): objects as the watch last showed them."""

    __slots__ = ("_objects",)

    def __init__(self, objects: dict[str, Raw]) -> None:
        self._objects = objects

    def list(self, namespace: str | None = None) -> list[Raw]:
        """Every object, or those of one namespace."""
        if namespace is None:
            return list(self._objects.values())
        return [o for o in self._objects.values() if metadata(o).get("namespace") == namespace]

    def get(self, name: str, namespace: str = "") -> Raw | None:
        return self._objects.get(f"{namespace}/{name}" if namespace else name)


class Informer:
    """One resource's store and the plugins' handlers on it."""

    __slots__ = ("_handlers", "_objects", "gvr", "synced")

    def __init__(self, gvr: GroupVersionResource) -> None:
        self.gvr = gvr
        self._objects: dict[str, Raw] = {}
        self._handlers: list[ResourceEventHandlerFuncs] = []
        self.synced = False  # set once the first list is in (upstream HasSynced)

    def __len__(self) -> int:
        return len(self._objects)

    def lister(self) -> Lister:
        return Lister(self._objects)

    def has_synced(self) -> bool:
        return self.synced

    def add_event_handler(
        self,
        handler: ResourceEventHandlerFuncs | None = None,
        *,
        add_func: AddFunc | None = None,
        update_func: UpdateFunc | None = None,
        delete_func: DeleteFunc | None = None,
    ) -> None:
        """Be told of every change; a handler added late first hears an add per stored object,
        as client-go's does."""
        h = handler or ResourceEventHandlerFuncs(add_func, update_func, delete_func)
        self._handlers.append(h)
        if h.add_func is not None:
            for obj in list(self._objects.values()):
                self._call(h.add_func, obj)

    def on_event(self, etype: str | None, raw: Raw) -> tuple[Raw | None, Raw | None] | None:
        """One watch event (None: an item of a list): store it, tell the handlers, and return
        ``(old, new)`` (None on the missing side), or None when nothing changed."""
        key = object_key(raw)
        old = self._objects.get(key)
        if etype == DELETED:
            if old is None:
                return None
            del self._objects[key]
            for h in self._handlers:
                if h.delete_func is not None:
                    self._call(h.delete_func, old)
            return old, None
        if old is not None and _rv(old) and _rv(old) == _rv(raw):
            return None
        self._objects[key] = raw
        for h in self._handlers:
            if old is None and h.add_func is not None:
                self._call(h.add_func, raw)
            elif old is not None and h.update_func is not None:
                self._call(h.update_func, old, raw)
        return old, raw

    def _call(self, fn: Callable[..., None], *objs: Raw) -> None:
        try:
            fn(*objs)
        except Exception:
            # A plugin's handler failing must not stop the watch nor the other handlers.
            log.exception("informer_handler_failed", resource=str(self.gvr), object=object_key(objs[-1]))


def _rv(raw: Raw) -> str:
    return str(metadata(raw).get("resourceVersion") or "")


class InformerFactory:
    """The informers plugins asked for, one per resource, shared by every profile."""

    __slots__ = ("_informers",)

    def __init__(self) -> None:
        self._informers: dict[GroupVersionResource, Informer] = {}

    def for_resource(self, gvr: GroupVersionResource | str) -> Informer:
        """The informer of ``gvr`` ("configmaps.v1." or a GroupVersionResource), created on
        first request. Ask while the plugin is built: the live scheduler watches what was
        asked for by the time it starts."""
        if isinstance(gvr, str):
            gvr = GroupVersionResource.parse(gvr)
        inf = self._informers.get(gvr)
        if inf is None:
            inf = self._informers[gvr] = Informer(gvr)
        return inf

    def get(self, gvr: GroupVersionResource | str) -> Informer | None:
        if isinstance(gvr, str):
            try:
                gvr = GroupVersionResource.parse(gvr)
            except ValueError:
                return None
        return self._informers.get(gvr)

    def resources(self) -> list[GroupVersionResource]:
        return list(self._informers)

    def informers(self) -> Iterable[Informer]:
        return list(self._informers.values())

    def offer(self, raw: Raw) -> bool:
        """An object from a file (``simulate``): stored if some informer wants its kind."""
        kind, api_version = raw.get("kind"), raw.get("apiVersion")
        if not isinstance(kind, str) or not isinstance(api_version, str):
            return False
        inf = self._informers.get(guess_resource(api_version, kind))
        if inf is None:
            return False
        inf.on_event(None, raw)
        return True

    def mark_synced(self) -> None:
        for inf in self._informers.values():
            inf.synced = True

