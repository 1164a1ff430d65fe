"""Pieces the metric families are built from: component-base's conventions (the stability level
in front of the help text, buckets computed as Go computes them), a histogram that takes many
equal observations in one call, collectors read at scrape time, and the exposition that leaves
out families without samples as the Go client does."""

from __future__ import annotations

import bisect
import decimal
import math
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)


@dataclass(frozen=True)
class Schema:
    """A family as exposed: counters under their ``_total`` name; ``buckets`` for histograms."""

    name: str
    type: str
    help: str
    labels: tuple[str, ...]
    buckets: tuple[float, ...] = ()


ALPHA = "ALPHA"
BETA = "BETA"
STABLE = "STABLE"


def helptext(level: str, text: str) -> str:
    """component-base prefixes every help text with the metric's stability level."""
    return f"[{level}] {text}"


def go_float(f: float) -> str:
    """A float as Go's strconv.FormatFloat(f, 'g', -1, 64) writes it, as the Go client writes
    a bucket's ``le``: shortest digits, exponent form below 1e-4 and from 1e6 ("64", not "64.0";
    "1e+06"). Dashboards select buckets by that string."""
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if math.isnan(f):
        return "NaN"
    if f == 0:
        return "0"
    sign, digits, exp = decimal.Decimal(repr(f)).normalize().as_tuple()
    assert isinstance(exp, int)
    ds = "".join(map(str, digits))
    dp = len(ds) + exp  # where the decimal point goes, counted from the first digit
    x = dp - 1
    neg = "-" if sign else ""
    if x < -4 or x >= 6:
        mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        return f"{neg}{mant}e{'-' if x < 0 else '+'}{abs(x):02d}"
    if dp <= 0:
        return f"{neg}0.{'0' * -dp}{ds}"
    if dp >= len(ds):
        return f"{neg}{ds}{'0' * (dp - len(ds))}"
    return f"{neg}{ds[:dp]}.{ds[dp:]}"


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """prometheus.ExponentialBuckets: each bound the previous one times ``factor``, multiplied
    step by step (``start * factor**i`` differs in the last bit for factor 1.5)."""
    out: list[float] = []
    for _ in range(count):
        out.append(start)
        start *= factor
    return out


class _HistChild:
    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: list[float]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # per bucket, not cumulative; the last is +Inf
        self.total = 0.0

    def observe(self, value: float, n: int = 1) -> None:
        """``n`` observations of ``value`` (one call for a batch of nodes)."""
        self.counts[bisect.bisect_left(self.bounds, value)] += n
        self.total += value * n


class _LockedChild(_HistChild):
    __slots__ = ("lock",)

    def __init__(self, bounds: list[float]) -> None:
        super().__init__(bounds)
        self.lock = threading.Lock()

    def observe(self, value: float, n: int = 1) -> None:
        i = bisect.bisect_left(self.bounds, value)
        with self.lock:
            self.counts[i] += n
            self.total += value * n


class BulkHistogram:
    """A labelled histogram whose buckets are written as the Go client writes them.
    observe(value, n) costs one bisect, so a batch plugin's time spread over its nodes is one
    call. Children of the event-loop thread's histograms take no lock; ``threads=True`` for
    the ones API threads observe."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str], buckets: Sequence[float],
                 *, threads: bool = False) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.bounds = list(buckets)
        self._les = [go_float(b) for b in self.bounds] + ["+Inf"]
        self._child = _LockedChild if threads else _HistChild
        self._children: dict[tuple[str, ...], _HistChild] = {}
        self._lock = threading.Lock()
        if not self.labelnames:
            self.labels()  # an unlabelled histogram always has its one series, as in Go

    def labels(self, *values: str) -> _HistChild:
        c = self._children.get(values)
        if c is None:
            with self._lock:
                c = self._children.setdefault(values, self._child(self.bounds))
        return c

    def observe(self, value: float, n: int = 1) -> None:
        """The unlabelled histogram's one series."""
        self.labels().observe(value, n)

    def _family(self) -> HistogramMetricFamily:
        return HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def schema(self) -> list[Schema]:
        return [Schema(self.name, "histogram", self.documentation, self.labelnames, tuple(self.bounds))]

    def describe(self) -> Iterator[Metric]:
        yield self._family()

    def collect(self) -> Iterator[Metric]:
        fam = self._family()
        for values, c in list(self._children.items()):
            acc, cumulative = 0, []
            for le, n in zip(self._les, list(c.counts)):
                acc += n
                cumulative.append((le, float(acc)))
            fam.add_metric(list(values), cumulative, c.total)
        yield fam


class ScrapeFamily:
    """A family whose samples a function computes when scraped: ``read()`` yields
    (label values, value). ``kind`` is "gauge" or "counter"."""

    def __init__(self, kind: str, name: str, documentation: str, labelnames: Sequence[str],
                 read: Callable[[], Iterable[tuple[Sequence[str], float]]]) -> None:
        self.kind = kind
        self.name = name
        self.documentation = documentation
        self.labelnames = list(labelnames)
        self.read = read

    def schema(self) -> list[Schema]:
        name = self.name
        if self.kind == "counter" and not name.endswith("_total"):
            name += "_total"
        return [Schema(name, self.kind, self.documentation, tuple(self.labelnames))]

    def _family(self) -> GaugeMetricFamily | CounterMetricFamily:
        if self.kind == "counter":
            return CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        return GaugeMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def describe(self) -> Iterator[Metric]:
        yield self._family()

    def collect(self) -> Iterator[Metric]:
        fam = self._family()
        for values, value in self.read():
            fam.add_metric(list(values), float(value))
        yield fam


class _NonEmpty:
    """The registry's families that have samples: the Go client writes nothing for a vector
    family with no child, where the Python client writes its HELP and TYPE lines. Counters
    marked ``bare`` (named without ``_total`` in Go) are noted for ``exposition``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.bare: list[str] = []

    def collect(self) -> Iterator[Metric]:
        for fam in self.registry.collect():
            if fam.samples:
                if getattr(fam, "bare", False):
                    self.bare.append(fam.name)
                yield fam


def exposition(registry: CollectorRegistry) -> bytes:
    families = _NonEmpty(registry)
    text = generate_latest(families)  # type: ignore[arg-type]
    for name in families.bare:
        # The Python client names a counter's HELP and TYPE lines <name>_total; Go keeps the name.
        n = name.encode()
        text = text.replace(b"# HELP " + n + b"_total ", b"# HELP " + n + b" ", 1)
        text = text.replace(b"# TYPE " + n + b"_total counter", b"# TYPE " + n + b" counter", 1)
    return text


def schema(registry: CollectorRegistry) -> dict[str, Schema]:
    """Every family the registry holds, samples or not, by exposed name (docs and tests)."""
    out: dict[str, Schema] = {}
    for collector in list(registry._collector_to_names):
        for s in collector_schema(collector):
            out[s.name] = s
    return out


def collector_schema(collector: Any) -> list[Schema]:
    own = getattr(collector, "schema", None)
    if own is not None:
        return list(own())
    kind = collector._type  # a prometheus_client metric: Counter, Gauge, Histogram
    name = collector._name + ("_total" if kind == "counter" else "")
    buckets = tuple(b for b in getattr(collector, "_upper_bounds", ()) if not math.isinf(b))
    return [Schema(name, kind, collector._documentation, tuple(collector._labelnames), buckets)]
