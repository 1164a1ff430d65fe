"""The node-declared-features library the scheduler plugin uses
(upstream k8s.io/component-helpers/nodedeclaredfeatures: framework.go, featureset.go, bitmap.go;
upstream's ``Framework`` is ``FeatureRegistry`` here, apart from the scheduler's framework).

Only what scheduling needs is here: mapping feature names onto a fixed, sorted registry,
feature sets as bitmaps (a Python int plus the registry size), and inferring which features a
pod needs from its spec, with the per-feature version cut-off. Discovery on the node side and
update-time inference are kubelet/admission concerns and are left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Spec = Mapping[str, Any]

# The scheduler version the inference is run for (upstream passes its own component version).
TARGET_VERSION = "1.36.3"


class FeatureError(ValueError):
    """Bad input to the library (unknown feature, size mismatch, missing version)."""


# ---------------------------------------------------------------------------------------------
# Versions (apimachinery util/version: only the ordering the inference needs)

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


@dataclass(frozen=True, slots=True)
class Version:
    major: int
    minor: int
    patch: int
    pre_release: str = ""

    @staticmethod
    def parse(text: str) -> Version:
        m = _VERSION.match(text.strip())
        if m is None:
            raise FeatureError(f"could not parse {text!r} as version")
        return Version(int(m.group(1)), int(m.group(2)), int(m.group(3) or 0), m.group(4) or "")

    def compare(self, other: Version) -> int:
        a, b = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if a != b:
            return -1 if a < b else 1
        # Semver: a pre-release sorts before the release itself; build metadata is ignored.
        if self.pre_release == other.pre_release:
            return 0
        if not self.pre_release:
            return 1
        if not other.pre_release:
            return -1
        return _compare_pre_release(self.pre_release, other.pre_release)

    def greater_than(self, other: Version) -> bool:
        return self.compare(other) > 0


def _compare_pre_release(a: str, b: str) -> int:
    xs, ys = a.split("."), b.split(".")
    for x, y in zip(xs, ys, strict=False):
        if x == y:
            continue
        xn, yn = x.isdigit(), y.isdigit()
        if xn and yn:
            return -1 if int(x) < int(y) else 1
        if xn != yn:
            return -1 if xn else 1  # numeric identifiers sort before alphanumeric ones
        return -1 if x < y else 1
    if len(xs) == len(ys):
        return 0
    return -1 if len(xs) < len(ys) else 1


# ---------------------------------------------------------------------------------------------
# Feature sets


class FeatureSet:
    """A set of registry indices; bit i is the i-th registered (sorted) feature name."""

    __slots__ = ("bits", "size")

    def __init__(self, size: int, bits: int = 0) -> None:
        if size < 0:
            raise FeatureError(f"bitmap size must be positive: {size}")
        self.size = size
        self.bits = bits

    def _index(self, i: int) -> int:
        if i < 0 or i >= self.size:
            raise FeatureError(f"bitmap index out of range: {i}")
        return i

    def set(self, i: int) -> None:
        self.bits |= 1 << self._index(i)

    def get(self, i: int) -> bool:
        return bool(self.bits >> self._index(i) & 1)

    def is_empty(self) -> bool:
        return self.bits == 0

    def is_subset(self, other: FeatureSet) -> bool:
        if self.size != other.size:
            raise FeatureError(f"bitmap size mismatch; {self.size} != {other.size}")
        return self.bits & ~other.bits == 0

    def difference(self, other: FeatureSet) -> FeatureSet:
        if self.size != other.size:
            raise FeatureError(f"bitmap size mismatch: {self.size} != {other.size}")
        return FeatureSet(self.size, self.bits & ~other.bits)

    def clone(self) -> FeatureSet:
        return FeatureSet(self.size, self.bits)

    def __eq__(self, other: object) -> bool:
        # Sets over registries of different sizes are never equal (no error, as upstream).
        if not isinstance(other, FeatureSet):
            return NotImplemented
        return self.size == other.size and self.bits == other.bits

    def __hash__(self) -> int:
        return hash((self.size, self.bits))

    def __str__(self) -> str:
        return "".join("1" if self.bits >> i & 1 else "0" for i in range(self.size))

    def __repr__(self) -> str:
        return f"FeatureSet({self})"


class FeatureMapper:
    """Feature names <-> FeatureSet indices, over the sorted registry."""

    __slots__ = ("_cache", "registered")

    # Distinct node feature lists are few (one per kubelet configuration); bound it anyway.
    _CACHE_LIMIT = 1024

    def __init__(self, features: Iterable[str]) -> None:
        self.registered: tuple[str, ...] = tuple(sorted(features))
        self._cache: dict[tuple[str, ...], int] = {}

    def new_feature_set(self) -> FeatureSet:
        return FeatureSet(len(self.registered))

    def map_sorted(self, sorted_features: Sequence[str]) -> FeatureSet:
        """Map a sorted list of names; an unregistered name is an error."""
        bits, unknown = self._walk(sorted_features, stop_at_unknown=True)
        if unknown is not None:
            raise FeatureError(f"unknown feature {unknown}")
        return FeatureSet(len(self.registered), bits)

    def try_map(self, sorted_features: Sequence[str]) -> FeatureSet:
        """Map a sorted list of names, dropping the ones the registry does not know."""
        return FeatureSet(len(self.registered), self.try_map_bits(tuple(sorted_features)))

    def try_map_bits(self, sorted_features: tuple[str, ...]) -> int:
        """``try_map`` as a bare bitmask, memoised per distinct list (the Filter hot path)."""
        bits = self._cache.get(sorted_features)
        if bits is None:
            bits = self._walk(sorted_features, stop_at_unknown=False)[0]
            if len(self._cache) >= self._CACHE_LIMIT:
                self._cache.clear()
            self._cache[sorted_features] = bits
        return bits

    def _walk(self, names: Sequence[str], *, stop_at_unknown: bool) -> tuple[int, str | None]:
        # A merge of two sorted lists, exactly as upstream: on an unsorted input names can be
        # missed, which is what the real scheduler does too (the API rejects unsorted lists).
        reg = self.registered
        bits = 0
        i = j = 0
        while i < len(names) and j < len(reg):
            if names[i] == reg[j]:
                bits |= 1 << j
                i += 1
                j += 1
            elif names[i] < reg[j]:
                if stop_at_unknown:
                    return bits, names[i]
                i += 1
            else:
                j += 1
        if stop_at_unknown and i < len(names):
            return bits, names[i]
        return bits, None

    def unmap(self, fs: FeatureSet) -> list[str]:
        if fs.size != len(self.registered):
            raise FeatureError(
                f"feature size mismatch! s.size={fs.size}; len(m.registeredFeatures)={len(self.registered)}"
            )
        return [name for i, name in enumerate(self.registered) if fs.bits >> i & 1]


# ---------------------------------------------------------------------------------------------
# Features and their registry


@dataclass(frozen=True, slots=True)
class Feature:
    """One node-declared feature as the scheduler sees it.

    ``infer_for_scheduling`` reads the pod spec (the raw API dict). ``max_version``: from the
    version after it every node is assumed to have the feature, so pods stop requiring it.
    """

    name: str
    infer_for_scheduling: Callable[[Spec], bool]
    max_version: Version | None = None


class FeatureRegistry(FeatureMapper):
    """A feature registry, sorted by name, with pod-requirement inference (upstream
    nodedeclaredfeatures.Framework)."""

    __slots__ = ("features",)

    def __init__(self, features: Iterable[Feature]) -> None:
        feats = sorted(features, key=lambda f: f.name)
        super().__init__(f.name for f in feats)
        self.features: tuple[Feature, ...] = tuple(feats)

    def infer_for_pod_scheduling(self, spec: Spec, target_version: Version | None) -> FeatureSet:
        """The features a pod with this spec needs from its node."""
        if target_version is None:
            raise FeatureError("target version cannot be nil")
        bits = 0
        for i, f in enumerate(self.features):
            if f.max_version is not None and target_version.greater_than(f.max_version):
                continue
            if f.infer_for_scheduling(spec):
                bits |= 1 << i
        return FeatureSet(len(self.features), bits)
