"""Storage objects in the live scheduler: the watcher feeds the volume plugins' store and moves
pods with the cluster events the plugins registered (upstream eventhandlers.go addAllEventHandlers,
buildEvtResHandler), and VolumeBinding's PreBind writes through the handle's volume API and waits
on the watched store (upstream volumebinding/binder.go BindPodVolumes, binder_test.go
TestBindPodVolumes)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from scheduler.backend.queue import ACTIVE, BACKOFF, UNSCHEDULABLE
from scheduler.framework.events import ActionType
from scheduler.live.kube.clients import Credentials
from scheduler.live.watch.informer import DELETED, MODIFIED
from scheduler.live.watch.watcher import Watcher
from scheduler.plugins.volumebinding import VolumeBinding
from scheduler.testing.builders import make_node, make_pod
from scheduler.testing.builders import with_resource_version as rv
from scheduler.testing.harness import Harness
from scheduler.testing.storage import claim_vol, pv, pvc, storage_class

STORAGE = ("PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSINode", "CSIDriver",
           "CSIStorageCapacity", "VolumeAttachment")


def live() -> tuple[Harness, Watcher]:
    h = Harness()
    w = Watcher(h.sched, lambda: Credentials(server="https://unused"), kinds=("Pod", "Node", *STORAGE))
    return h, w


def queued(h: Harness) -> dict[str, int]:
    return h.queue.counts()


@pytest.mark.parametrize(
    ("kind", "actions"),
    [
        # The union of the default plugins' EventsToRegister (volume_binding.go, volume_zone.go,
        # non_csi.go/csi.go, volume_restrictions.go): the actions upstream installs handlers for.
        ("PersistentVolumeClaim", ActionType.ADD | ActionType.UPDATE),
        ("PersistentVolume", ActionType.ADD | ActionType.UPDATE),
        ("StorageClass", ActionType.ADD | ActionType.UPDATE),
        ("CSINode", ActionType.ADD | ActionType.UPDATE),
        ("CSIDriver", ActionType.UPDATE),
        ("CSIStorageCapacity", ActionType.ADD | ActionType.UPDATE),
        ("VolumeAttachment", ActionType.DELETE),
    ],
)
def test_registered_actions(kind: str, actions: ActionType) -> None:
    h = Harness()
    assert h.queue.registered_actions(kind) == actions


async def test_missing_claim_waits_and_is_placed_when_it_appears() -> None:
    h, w = live()
    w.dispatch("Node", "ADDED", rv(make_node("n1", cpu="4"), 1))
    w.dispatch("Node", "ADDED", rv(make_node("n2", cpu="4"), 2))
    w.dispatch("Pod", "ADDED", rv(make_pod("p", cpu="1", volumes=[claim_vol("data")]), 3))
    assert await h.step()
    assert h.bound() == {}
    assert queued(h)[UNSCHEDULABLE] == 1
    note = h.events("FailedScheduling")[0]["note"]
    assert 'persistentvolumeclaim "data" not found' in note

    # A claim of another pod: VolumeBinding's PVC hint skips it.
    w.dispatch("PersistentVolumeClaim", "ADDED", rv(pvc("other", volume="pv-x", bound=True), 4))
    assert queued(h)[UNSCHEDULABLE] == 1
    # Its delete: no plugin registered PVC Delete, so nothing is even offered to the hints.
    moves: list[str] = []
    orig = h.queue.move_all_to_active_or_backoff
    h.queue.move_all_to_active_or_backoff = lambda ev, *a, **k: moves.append(ev.label) or orig(ev, *a, **k)  # type: ignore[method-assign]
    w.dispatch("PersistentVolumeClaim", DELETED, rv(pvc("other"), 5))
    assert moves == []
    assert "default/other" not in h.sched.listers.storage.pvcs

    # The PV pre-bound to the claim, pinned to n2, then the claim bound to it.
    local = pv("pv-data", claim=("default", "data"), affinity={"kubernetes.io/hostname": ["n2"]}, phase="Bound")
    w.dispatch("PersistentVolume", "ADDED", rv(local, 6))
    w.dispatch("PersistentVolumeClaim", "ADDED", rv(pvc("data", volume="pv-data", bound=True, phase="Bound"), 7))
    assert moves[-1] == "PersistentVolumeClaimAdd"
    assert queued(h)[UNSCHEDULABLE] == 0
    assert queued(h)[ACTIVE] + queued(h)[BACKOFF] == 1
    h.clock.step(60)
    h.queue.flush_backoff_completed()
    assert await h.step()
    assert h.bound() == {"p": "n2"}


def test_storage_store_follows_watch_and_relist() -> None:
    h, w = live()
    store = h.sched.listers.storage
    w.begin_list("PersistentVolume")
    w.dispatch("PersistentVolume", None, rv(pv("a"), 1))
    w.dispatch("PersistentVolume", None, rv(pv("b"), 2))
    w.end_list("PersistentVolume")
    assert sorted(store.pvs) == ["a", "b"]
    # Status-only PV change: delivered (the stored resourceVersion is what PreBind's Update carries).
    changed = rv(pv("a", phase="Released"), 3)
    w.dispatch("PersistentVolume", MODIFIED, changed)
    assert store.pvs["a"].resource_version == "3"
    # A re-list without "b": Replace deletes it from the plugins' store too.
    w.begin_list("PersistentVolume")
    w.dispatch("PersistentVolume", None, changed)
    w.end_list("PersistentVolume")
    assert sorted(store.pvs) == ["a"]
    # A VolumeAttachment's status churn is not read by any plugin: dropped before parsing.
    va = {"metadata": {"name": "va", "resourceVersion": "4"},
          "spec": {"attacher": "d", "nodeName": "n1", "source": {"persistentVolumeName": "a"}},
          "status": {"attached": False}}
    w.dispatch("VolumeAttachment", "ADDED", va)
    before = w.events
    w.dispatch("VolumeAttachment", MODIFIED, {**rv(va, 5), "status": {"attached": True}})
    assert w.events == before
    assert store.volume_attachments["va"].node_name == "n1"


def test_bad_storage_object_is_refused_in_one_line() -> None:
    h, w = live()
    bad = rv(pv("bad"), 1)
    bad["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": "nope"}}
    w.dispatch("PersistentVolume", "ADDED", bad)
    assert w.errors == 1
    assert "bad" not in h.sched.listers.storage.pvs
    assert "bad" not in w.stores["PersistentVolume"]  # offered again by the next list


# ---------------------------------------------------------------------------------------------
# PreBind through the handle's volume API


class ControllerAPI:
    """The API server plus, when ``complete``, the PV controller: every write comes back through
    the watch, and the controller then marks the claim bound (as pv_controller.go would)."""

    def __init__(self, w: Watcher, complete: bool = True) -> None:
        self.w = w
        self.complete = complete
        self.version = 100
        self.writes: list[str] = []

    def _stored(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        self.version += 1
        return rv(dict(raw), self.version)

    async def update_persistent_volume(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        new = self._stored(raw)
        self.writes.append(f"pv/{new['metadata']['name']}")
        self.w.dispatch("PersistentVolume", MODIFIED, copy.deepcopy(new))
        if self.complete:
            ref = new["spec"]["claimRef"]
            claim = self.w.handlers.listers.storage.pvcs[f"{ref['namespace']}/{ref['name']}"]  # type: ignore[attr-defined]
            done = self._stored(claim.raw)
            done["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
            done["spec"] = {**done["spec"], "volumeName": new["metadata"]["name"]}
            self.w.dispatch("PersistentVolumeClaim", MODIFIED, done)
        return new

    async def update_persistent_volume_claim(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        raise AssertionError("no dynamic provisioning in these cases")


def prebind_case(complete: bool) -> tuple[Harness, Watcher, ControllerAPI]:
    h, w = live()
    api = ControllerAPI(w, complete)
    for fw in h.sched.frameworks.values():
        fw.handle.volume_api = api  # type: ignore[attr-defined]
    w.dispatch("Node", "ADDED", rv(make_node("n1", cpu="4"), 1))
    w.dispatch("Node", "ADDED", rv(make_node("n2", cpu="4"), 2))
    w.dispatch("StorageClass", "ADDED", rv(storage_class("local", provisioner="kubernetes.io/no-provisioner"), 3))
    w.dispatch("PersistentVolume", "ADDED",
               rv(pv("pv-1", cls="local", affinity={"kubernetes.io/hostname": ["n1"]}), 4))
    w.dispatch("PersistentVolumeClaim", "ADDED", rv(pvc("c1", cls="local", size="1Gi"), 5))
    w.dispatch("Pod", "ADDED", rv(make_pod("p", cpu="1", volumes=[claim_vol("c1")]), 6))
    return h, w, api


async def test_prebind_binds_the_volume_and_the_pod() -> None:
    # TestBindPodVolumes "bind: one binding": the PV claimRef is written, the controller binds.
    h, _, api = prebind_case(complete=True)
    assert await h.step()
    assert api.writes == ["pv/pv-1"]
    assert h.bound() == {"p": "n1"}


async def test_prebind_times_out_unreserves_and_requeues() -> None:
    # TestBindPodVolumes "checkbindings: timeout": nobody binds the claim within bindTimeoutSeconds.
    h, _, api = prebind_case(complete=False)
    plugin = h.sched.frameworks["default-scheduler"].plugins["VolumeBinding"]
    assert isinstance(plugin, VolumeBinding)
    plugin.binder.bind_timeout = 0
    assert await h.step()
    assert api.writes == ["pv/pv-1"]
    assert h.bound() == {}
    assert "binding volumes: context deadline exceeded" in h.events("FailedScheduling")[0]["note"]
    assert h.cache.get_pod("uid-default-p") is None  # the assumption is forgotten
    assert "uid-default-p" in h.queue
    # No API rollback (as upstream): the watched PV, pre-bound by the write, is what the next
    # attempt sees; no assumed version is laid over it any more.
    seen = plugin.binder.cache.get_pv("pv-1")
    assert seen is h.sched.listers.storage.pvs["pv-1"]
    assert seen.claim_ref is not None and seen.claim_ref[:2] == ("default", "c1")


def test_app_wires_the_watched_store_and_the_volume_api(kubeconfig: Callable[[dict[str, Any]], str]) -> None:
    # The store the watcher's handler feeds is the one every volume plugin reads, and PreBind
    # gets the app's API client (a live PreBind without one fails every pod with claims).
    from scheduler.config import load_config
    from scheduler.live.app import App
    from scheduler.live.kube.clients import CredentialSource
    from scheduler.live.metrics import Metrics
    from scheduler.plugins.registry import default_registry

    creds = CredentialSource(kubeconfig({"token": "unused"}))
    app = App(load_config(None), default_registry(), Metrics(), creds, None)
    try:
        store = app.scheduler.listers.storage
        plugins = app.scheduler.frameworks["default-scheduler"].plugins
        for name in ("VolumeBinding", "VolumeZone", "NodeVolumeLimits", "VolumeRestrictions"):
            assert plugins[name].store is store, name  # type: ignore[attr-defined]
        vb = plugins["VolumeBinding"]
        assert isinstance(vb, VolumeBinding)
        assert vb.api is app.volume_api
        assert set(STORAGE) <= set(app.watcher.kinds)
    finally:
        app._close()
