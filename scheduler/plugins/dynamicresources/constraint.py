"""Claim constraints (upstream structured's constraint.go): matchAttribute and
distinctAttribute, checked as devices are added to and removed from a candidate allocation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.model.dra import Attribute, Device

if TYPE_CHECKING:
    from scheduler.plugins.dynamicresources.pools import DeviceID


def lookup_attribute(device: Device, driver: str, name: str) -> Attribute | None:
    a = device.attributes.get(name)
    if a is not None:
        return a
    i = name.find("/")
    if i < 0 or name[:i] != driver:
        return None
    return device.attributes.get(name[i + 1 :])


class Constraint:
    __slots__ = ("attribute", "attributes", "distinct", "name", "num", "requests")

    def __init__(self, requests: list[str], name: str, distinct: bool) -> None:
        self.requests = set(requests)
        self.name = name
        self.distinct = distinct
        self.attribute: Attribute | None = None
        self.attributes: dict[str, Attribute] = {}
        self.num = 0

    def _applies(self, req: str, sub: str) -> bool:
        if not self.requests:
            return True
        if sub == "":
            return req in self.requests
        return req in self.requests or f"{req}/{sub}" in self.requests

    def add(self, req: str, sub: str, device: Device, did: DeviceID) -> bool:
        if not self._applies(req, sub):
            return True
        attr = lookup_attribute(device, did[0], self.name)
        if attr is None:
            return False
        if self.distinct:
            if self.num > 0 and attr in self.attributes.values():
                return False
            self.attributes[req] = attr
            self.num += 1
            return True
        if self.num == 0:
            self.attribute, self.num = attr, 1
            return True
        if self.attribute is None or attr.kind != self.attribute.kind or attr.value != self.attribute.value:
            return False
        self.num += 1
        return True

    def remove(self, req: str, sub: str) -> None:
        if not self._applies(req, sub):
            return
        if self.distinct:
            self.attributes.pop(req, None)
        self.num -= 1
