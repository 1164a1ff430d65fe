"""The assume cache of VolumeBinding (upstream volumebinding/assume_cache.go and its passive
assume cache): the informer's PVs and PVCs with the versions the scheduler assumed laid over them,
so that one cycle's Reserve is seen by the next.
"""

from __future__ import annotations

from scheduler.framework.listers import StorageStore
from scheduler.model.storage import NotFoundError, PersistentVolume, PersistentVolumeClaim
from scheduler.plugins.volumebinding.errors import BinderError


class AssumeCache:
    """The informer's PVs and PVCs with the scheduler's assumed versions laid over them.

    An assumed object stays visible while the stored object keeps the resourceVersion it was
    assumed from; once the watch delivers a newer version, that version wins (upstream
    passiveAssumeCache).
    """

    __slots__ = ("pvcs", "pvs", "store")

    def __init__(self, store: StorageStore) -> None:
        self.store = store
        self.pvs: dict[str, PersistentVolume] = {}
        self.pvcs: dict[str, PersistentVolumeClaim] = {}

    def get_pv(self, name: str) -> PersistentVolume:
        api = self.store.get_pv(name)
        assumed = self.pvs.get(name)
        return assumed if assumed is not None and assumed.resource_version == api.resource_version else api

    def get_pvc(self, key: str) -> PersistentVolumeClaim:
        api = self.store.pvcs.get(key)
        if api is None:
            raise NotFoundError("persistentvolumeclaim", key)
        assumed = self.pvcs.get(key)
        return assumed if assumed is not None and assumed.resource_version == api.resource_version else api

    def list_pvs(self, class_name: str) -> list[PersistentVolume]:
        # Sorted by name so that ties between equal-size PVs break the same way every run.
        out = []
        for pv in sorted(self.store.pvs_of_class(class_name), key=lambda p: p.name):
            assumed = self.pvs.get(pv.name)
            out.append(assumed if assumed is not None and assumed.resource_version == pv.resource_version else pv)
        return out

    def assume_pv(self, pv: PersistentVolume) -> None:
        stored = self.store.get_pv(pv.name)
        if stored.resource_version != pv.resource_version:
            raise BinderError(
                f'"{pv.name}" is out of sync (stored: {stored.resource_version}, assume: {pv.resource_version})'
            )
        self.pvs[pv.name] = pv

    def assume_pvc(self, pvc: PersistentVolumeClaim) -> None:
        stored = self.store.pvcs.get(pvc.key)
        if stored is None:
            raise NotFoundError("persistentvolumeclaim", pvc.key)
        if stored.resource_version != pvc.resource_version:
            raise BinderError(
                f'"{pvc.key}" is out of sync (stored: {stored.resource_version}, assume: {pvc.resource_version})'
            )
        self.pvcs[pvc.key] = pvc

    def restore_pv(self, pv: PersistentVolume) -> None:
        a = self.pvs.get(pv.name)
        if a is not None and a.resource_version == pv.resource_version:
            del self.pvs[pv.name]

    def restore_pvc(self, pvc: PersistentVolumeClaim) -> None:
        a = self.pvcs.get(pvc.key)
        if a is not None and a.resource_version == pvc.resource_version:
            del self.pvcs[pvc.key]
