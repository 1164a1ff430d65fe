"""Runs one scheduler_perf workload's ops against the live plane (executor.go, operations.go).

Each op does what upstream's ``WorkloadExecutor`` does, through the API server instead of an
in-process client, with the scheduler under test running as a separate process:

- createNodes: nodes from the template (or ``makeBaseNode``), named ``node-<op>-<rand5>`` when
  the template has only a generateName, with the ``kubernetes.io/hostname`` label; then the
  strategy applied to the op's positions in the name-sorted node list, as
  ``IntegrationTestNodePreparer``: label round-robin, a unique label (a UUID), or the CSINode of
  ``nodeAllocatableStrategy``. (That strategy's allocatable patch goes to the node's main
  resource, where the API server keeps the old status: it changes nothing upstream either, and
  is not sent.) The nodedeclaredfeatures tests also write ``status.declaredFeatures``
  (Feature1..N) into every node, as their Go hook does.
- createPods: ``count`` pods from the template in ``namespace`` (default ``namespace-<op>``),
  each with its own PVC and PV when the op names their templates (bound to each other, phase
  Bound); then waits until that many pods of the namespace are bound, or records them for a
  later barrier (skipWaitToCompletion), or keeps the namespace at ``count`` pods for
  ``duration`` (steadyState: a full batch bound is deleted and created again).
- barrier waits until the recorded pods are bound (or attempted: a PodScheduled condition);
  deletePods deletes by label, at a rate or all at once; churn creates (and, recreate, deletes)
  its objects in the background until the workload ends; createAny/updateAny write templates
  rendered per index (updateAny also PUTs the same object to /status); createResourceDriver
  publishes one ResourceSlice per matching node; allocResourceClaims allocates claims.
- collectMetrics / start/stopCollectingMetrics open and close a ``Window``.

Objects upstream decodes into Go types (nodes, pods, volumes, claims, namespaces) get their
field names as Go reads them (bench/perf_schema.py). Where upstream waits on the in-process
scheduler's own caches (createResourceDriver, the
declared-features hook), the bench cannot look inside the contestant and goes on.
"""

from __future__ import annotations

import concurrent.futures
import fnmatch
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from bench.live_http import ApiError, Kube
from bench.perf_config import Op, Workload
from bench.perf_objects import (
    Fixed,
    Obj,
    RestMapper,
    Template,
    allocate_claims,
    base_node,
    base_pod,
    body,
    csinode,
    rand_suffix,
    template,
    volume_pair,
)
from bench.perf_schema import typed
from bench.perf_tracker import PodTracker, Window
from scheduler.testing.dra_workloads import resource_slice

MERGE_PATCH = "application/merge-patch+json"
CREATE_RETRY_S = 20.0  # createAny retries for this long
# A window opens once kwok has started the bound pods, or after this long (see _settle).
SETTLE_MAX_S = 30.0
SETTLE_FEW = 10


class Hooks(Protocol):
    def window_started(self, win: Window) -> None: ...

    def window_stopped(self, win: Window) -> None: ...

    def check(self) -> None:
        """Raise if the run cannot go on (the contestant exited)."""


class OpFailed(RuntimeError):
    pass


def selector_query(selector: Mapping[str, str] | None) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted((selector or {}).items()))


class Executor:
    def __init__(
        self,
        kube: Kube,
        tracker: PodTracker,
        wl: Workload,
        ops: list[Op],
        hooks: Hooks,
        gates: Mapping[str, bool],
        wait_timeout: float = 600.0,
        workers: int = 16,
        seed: int = 0,
    ) -> None:
        self.kube, self.tracker, self.wl, self.ops, self.hooks = kube, tracker, wl, ops, hooks
        self.gates = gates
        self.wait_timeout = wait_timeout
        self.mapper = RestMapper(kube)
        self.rng = random.Random(seed)
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="perf-op")
        self.pending: dict[str, int] = {}  # numPodsScheduledPerNamespace
        self.next_node_index = 0
        self.window: Window | None = None
        self.closed: list[tuple[Window, dict[str, Any]]] = []
        self.background: list[threading.Thread] = []
        self.cancel = threading.Event()
        self.error: str | None = None
        self.ops_done = 0

    # ---- driving -------------------------------------------------------------------------

    def run(self) -> None:
        """Every op in order; the first failure ends the workload (recorded in ``error``)."""
        try:
            for op in self.ops:
                self.hooks.check()
                try:
                    getattr(self, f"_op_{op.opcode}")(op)
                except (ApiError, ValueError, TimeoutError, OpFailed, OSError) as exc:
                    # ValueError: ConfigError and TemplateError (a template or op the bench refuses).
                    raise OpFailed(f"op {op.index} ({op.opcode}): {exc}") from exc
                self.ops_done += 1
        except (OpFailed, RuntimeError) as exc:
            self.error = str(exc)
        finally:
            if self.window is not None:
                self._close(self.window)
            self.cancel.set()
            for t in self.background:
                t.join(timeout=30)
            self.pool.shutdown(wait=True, cancel_futures=True)

    def _parallel(self, fn: Callable[[Any], None], items: Iterable[Any]) -> None:
        futures = [self.pool.submit(fn, it) for it in items]
        try:
            for f in concurrent.futures.as_completed(futures):
                f.result()
        finally:
            for f in futures:
                f.cancel()

    def _background(self, name: str, fn: Callable[[], None]) -> None:
        def guarded() -> None:
            try:
                fn()
            except Exception as exc:  # a background op's failure ends nothing but itself upstream too
                if not self.cancel.is_set():
                    print(f"[{self.wl.full_name}] background {name}: {exc}", flush=True)

        t = threading.Thread(target=guarded, name=name, daemon=True)
        t.start()
        self.background.append(t)

    def _wait(self, what: str, pred: Callable[[], bool], *namespaces: str) -> None:
        self.tracker.wait_for(what, pred, self.wait_timeout, self.hooks.check, namespaces)

    # ---- windows -------------------------------------------------------------------------

    def _settle(self) -> tuple[float, int]:
        """Before a window opens: wait, at most SETTLE_MAX_S, until kwok has made Running the
        pods bound so far (all but a few: a churn op keeps binding). Otherwise the window
        starts with kwok's backlog from the ops before, which is larger after the contestant
        that bound those pods faster, and the API server's work on it lands in the window.
        Returns the seconds waited and the pods still starting."""
        t0 = time.monotonic()
        while True:
            starting, bound = self.tracker.starting()
            if starting <= max(SETTLE_FEW, bound // 50) or time.monotonic() - t0 >= SETTLE_MAX_S:
                return round(time.monotonic() - t0, 3), starting
            if self.cancel.wait(0.1):
                return round(time.monotonic() - t0, 3), starting

    def _open(self, name: str, namespaces: list[str], selector: Mapping[str, str] | None) -> Window:
        if self.window is not None:
            raise OpFailed("metrics collection is overlapping: a second collector started before the first stopped")
        settle = self._settle()
        win = Window(name, namespaces, selector)
        win.settle = settle
        self.hooks.window_started(win)
        self.tracker.open_window(win)
        self.window = win
        return win

    def _close(self, win: Window, steady: bool = False) -> None:
        self.tracker.close_window(win)
        self.hooks.window_stopped(win)
        matching = [p for ns in sorted(win.namespaces) for p in self.tracker.states(ns, win.selector)]
        bound = sum(1 for p in matching if p.node)
        binds = win.bind_times
        info: dict[str, Any] = {
            "name": win.name,
            "namespaces": sorted(win.namespaces),
            "label_selector": win.selector,
            "duration_s": round((win.t1 or win.t0) - win.t0, 3),
            "throughput": win.summary(),
            "binds": len(binds),
            "matching_pods": len(matching),
            "bound_pods": bound,
            "first_bind_s": round(binds[0] - win.t0, 3) if binds else None,
            "last_bind_s": round(binds[-1] - win.t0, 3) if binds else None,
            "pods_per_s_to_last_bind": (
                round(len(binds) / (binds[-1] - win.t0), 1) if binds and binds[-1] > win.t0 else None
            ),
            # A steady-state namespace always has pods being created; there the run is whole
            # when pods got bound at all (upstream's check).
            "complete": (len(binds) > 0) if steady else bound == len(matching),
            "backlog": win.backlog(),
            # Seconds waited for kwok before the window opened, and pods it had still not started.
            "settle_s": win.settle[0],
            "starting_at_open": win.settle[1],
        }
        self.closed.append((win, info))
        self.window = None

    # ---- namespaces ----------------------------------------------------------------------

    def _namespace(self, name: str, obj: Obj | None = None) -> None:
        ns = dict(obj or {"apiVersion": "v1", "kind": "Namespace"})
        ns["metadata"] = {**(ns.get("metadata") or {}), "name": name}
        ns.setdefault("apiVersion", "v1")
        ns.setdefault("kind", "Namespace")
        self.kube.request("POST", "/api/v1/namespaces", ns, ok=(201, 409))

    def _ensure_namespace(self, name: str) -> None:
        """createNamespaceIfNotPresent."""
        if name not in self.pending:
            self._namespace(name)
            self.pending[name] = 0

    # ---- createNodes ---------------------------------------------------------------------

    def _op_createNodes(self, op: Op) -> None:
        count = int(op.get("count", 0))
        prefix = f"node-{op.index}-"
        src = template(op.get("nodeTemplatePath")) if op.get("nodeTemplatePath") else Fixed(base_node(prefix))

        def create(i: int) -> None:
            base = typed(self.kube, src.object(i, count), "Node")
            for attempt in range(5):  # createNodeRetries: a random name may be taken
                node = dict(base)
                meta = dict(node.get("metadata") or {})
                name = meta.get("name") or (meta.get("generateName", "") + rand_suffix(self.rng))
                meta["name"] = name
                meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/hostname": name}
                node["metadata"] = meta
                try:
                    self.kube.request("POST", "/api/v1/nodes?fieldValidation=Strict", node, ok=(201,))
                    return
                except ApiError as exc:
                    if exc.status != 409 or attempt == 4:
                        raise

        self._parallel(create, range(count))
        self._prepare_nodes(op, count)
        self.next_node_index += count
        if self.wl.group == "nodedeclaredfeatures" and self.gates.get("NodeDeclaredFeatures"):
            self._declare_features()

    def _sorted_nodes(self) -> list[Obj]:
        doc = self.kube.request("GET", "/api/v1/nodes?limit=0")
        return sorted(doc.get("items") or [], key=lambda n: n["metadata"]["name"])

    def _prepare_nodes(self, op: Op, count: int) -> None:
        label = op.get("labelNodePrepareStrategy")
        unique = op.get("uniqueNodeLabelStrategy")
        alloc = op.get("nodeAllocatableStrategy")
        if not (label or unique or alloc):
            return  # TrivialNodePrepareStrategy
        nodes = [n["metadata"]["name"] for n in self._sorted_nodes()]
        targets = nodes[self.next_node_index : self.next_node_index + count]
        if len(targets) < count:
            raise OpFailed(f"{len(nodes)} nodes listed, positions {self.next_node_index}+{count} wanted")
        # Only one strategy applies, in this order (getNodePreparer).
        if alloc:
            drivers, migrated = alloc.get("csiNodeAllocatable") or {}, alloc.get("migratedPlugins") or []
            self._parallel(lambda n: self._csinode(n, drivers, migrated), targets)
            return
        if label:
            values = label["labelValues"]
            patches = [(n, {label["labelKey"]: values[i % len(values)]}) for i, n in enumerate(targets)]
        else:
            patches = [(n, {unique["labelKey"]: str(uuid.uuid4())}) for n in targets]

        def patch(item: tuple[str, dict[str, str]]) -> None:
            node, labels = item
            self.kube.request(
                "PATCH", f"/api/v1/nodes/{node}", {"metadata": {"labels": labels}}, content_type=MERGE_PATCH
            )

        self._parallel(patch, patches)

    def _csinode(self, node: str, drivers: Mapping[str, Any], migrated: list[str]) -> None:
        obj = csinode(node, drivers, migrated)
        base = "/apis/storage.k8s.io/v1/csinodes"
        try:
            self.kube.request("POST", base, obj, ok=(201,))
        except ApiError as exc:
            if exc.status != 409:
                raise
            cur = self.kube.request("GET", f"{base}/{node}")
            have = {d["name"]: d for d in cur["spec"].get("drivers") or []}
            for d in obj["spec"]["drivers"]:
                have.setdefault(d["name"], {"name": d["name"]})["allocatable"] = d["allocatable"]
            cur["spec"]["drivers"] = list(have.values())
            cur["metadata"].setdefault("annotations", {}).update(obj["metadata"]["annotations"])
            self.kube.request("PUT", f"{base}/{node}", cur)

    def _declare_features(self) -> None:
        n = int(self.wl.params.get("numNodeDeclaredFeatures", 0))
        names = sorted(f"Feature{i}" for i in range(1, n + 1))

        # A merge patch of the status, not upstream's read-modify-write: kwok writes node status
        # too (a conflict there would end the op).
        def update(name: str) -> None:
            patch = {"status": {"declaredFeatures": names}}
            self.kube.request("PATCH", f"/api/v1/nodes/{name}/status", patch, content_type=MERGE_PATCH)

        self._parallel(update, [n["metadata"]["name"] for n in self._sorted_nodes()])

    # ---- namespaces, pods ----------------------------------------------------------------

    def _op_createNamespaces(self, op: Op) -> None:
        path = op.get("namespaceTemplatePath")
        tmpl = typed(self.kube, template(path).object(), "Namespace") if path else None
        for i in range(int(op.get("count", 0))):
            name = f"{op.get('prefix')}-{i}"
            self._namespace(name, tmpl)
            self.pending.setdefault(name, 0)

    def _create_pods(self, ns: str, op: Op, count: int) -> None:
        """createPodsRapidly / the strategy of getPodStrategy."""
        src = template(op.get("podTemplatePath")) if op.get("podTemplatePath") else Fixed(base_pod())
        path = f"/api/v1/namespaces/{ns}/pods?fieldValidation=Strict"
        if op.get("persistentVolumeClaimTemplatePath"):
            pv_path, pvc_path = op.get("persistentVolumeTemplatePath"), op.get("persistentVolumeClaimTemplatePath")
            pv_t = typed(self.kube, template(pv_path).object(), "PersistentVolume")
            pvc_t = typed(self.kube, template(pvc_path).object(), "PersistentVolumeClaim")

            def with_volume(i: int) -> None:
                pv, pvc = volume_pair(pv_t, pvc_t, ns, i)
                claims = f"/api/v1/namespaces/{ns}/persistentvolumeclaims"
                self.kube.request("POST", claims, pvc, ok=(201,))
                self.kube.request("PUT", f"{claims}/{pvc['metadata']['name']}/status", pvc)
                self.kube.request("POST", "/api/v1/persistentvolumes", pv, ok=(201,))
                self.kube.request("PUT", f"/api/v1/persistentvolumes/{pv['metadata']['name']}/status", pv)
                pod = typed(self.kube, src.object(i, count), "Pod")
                pod.setdefault("spec", {})["volumes"] = [
                    {"name": "vol", "persistentVolumeClaim": {"claimName": pvc["metadata"]["name"]}}
                ]
                self.kube.request("POST", path, pod, ok=(201,))

            self._parallel(with_volume, range(count))
            return
        if not src.dynamic:
            data = body(typed(self.kube, src.object(0, count), "Pod"))
            self._parallel(lambda _i: self.kube.request("POST", path, data, ok=(201,)), range(count))
            return

        def create(i: int) -> None:
            self.kube.request("POST", path, body(typed(self.kube, src.object(i, count), "Pod")), ok=(201,))

        self._parallel(create, range(count))

    def _op_createPods(self, op: Op) -> None:
        ns = op.get("namespace") or f"namespace-{op.index}"
        self._ensure_namespace(ns)
        count = int(op.get("count", 0))
        win = self._open(ns, [ns], None) if op.get("collectMetrics") else None
        if op.get("steadyState"):
            self._steady(ns, op, count)
        else:
            self._create_pods(ns, op, count)
            if op.get("skipWaitToCompletion"):
                self.pending[ns] = self.pending.get(ns, 0) + count
            else:
                self._wait(f"{count} pods of {ns} scheduled", lambda: self.tracker.stages(ns)[0] >= count, ns)
        if win is not None:
            self._close(win, steady=bool(op.get("steadyState")))

    def _steady(self, ns: str, op: Op, count: int) -> None:
        """createPodsSteadily: keep ``count`` pods coming for ``duration``."""
        bound = threading.Semaphore(0)

        def on_bind(pod_ns: str, _name: str) -> None:
            if pod_ns == ns:
                bound.release()

        self.tracker.bind_listeners.append(on_bind)
        try:
            self._create_pods(ns, op, count)
            deadline = time.monotonic() + float(op.get("duration_s", 0))
            seen = 0
            while (left := deadline - time.monotonic()) > 0:
                self.hooks.check()
                if not bound.acquire(timeout=min(left, 0.5)):
                    continue
                seen += 1
                if seen % count == 0 and time.monotonic() < deadline:
                    self.kube.request(
                        "DELETE",
                        f"/api/v1/namespaces/{ns}/pods",
                        {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                         "propagationPolicy": "Background"},
                    )  # fmt: skip
                    self._create_pods(ns, op, count)
            if seen == 0:
                raise OpFailed("no pod at all got scheduled in the steady state")
        finally:
            self.tracker.bind_listeners.remove(on_bind)

    def _op_deletePods(self, op: Op) -> None:
        ns, sel = op.get("namespace"), selector_query(op.get("labelSelector"))
        rate = int(op.get("deletePodsPerSecond", 0))
        names = [name for _, name in self.kube.list_names(f"/api/v1/namespaces/{ns}/pods", f"labelSelector={sel}")[0]]

        def delete() -> None:
            if rate > 0:
                for name in names:
                    if self.cancel.wait(1.0 / rate):
                        return
                    self.kube.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{name}", ok=(200, 202, 404))
                return
            self.kube.request("DELETE", f"/api/v1/namespaces/{ns}/pods?labelSelector={sel}", ok=(200,))

        if op.get("skipWaitToCompletion"):
            self._background(f"deletePods-{op.index}", delete)
        else:
            delete()

    def _op_barrier(self, op: Op) -> None:
        namespaces = list(op.get("namespaces") or [])
        for ns in namespaces:
            if ns not in self.pending:
                raise OpFailed(f"unknown namespace {ns}")
        sel = op.get("labelSelector")
        attempted = op.get("stageRequirement") == "Attempted"
        # Attempted: scheduled or carrying a PodScheduled condition; Scheduled: bound.
        upto = 2 if attempted else 1
        stage = "attempted" if attempted else "scheduled"
        for ns in namespaces or sorted(self.pending):
            want = self.pending[ns]

            def reached(ns: str = ns, want: int = want) -> bool:
                return sum(self.tracker.stages(ns, sel)[:upto]) >= want

            self._wait(f"{want} pods of {ns} {stage}", reached, ns)
        if not attempted:
            if namespaces:
                for ns in namespaces:
                    self.pending.pop(ns, None)
            else:
                self.pending.clear()

    def _op_sleep(self, op: Op) -> None:
        self.cancel.wait(float(op.get("duration_s", 0)))

    def _op_startCollectingMetrics(self, op: Op) -> None:
        self._open(op.get("name") or f"op{op.index}", list(op.get("namespaces") or []), op.get("labelSelector"))

    def _op_stopCollectingMetrics(self, op: Op) -> None:
        if self.window is None:
            raise OpFailed("missing startCollectingMetrics operation before stopping")
        self._close(self.window)

    # ---- churn ---------------------------------------------------------------------------

    def _op_churn(self, op: Op) -> None:
        ns = op.get("namespace") or f"namespace-{op.index}"
        self._namespace(ns)
        objs = [template(p).object() for p in op.get("templatePaths") or []]
        colls = [self.mapper.collection(o, ns if self.mapper.mapping(o["apiVersion"], o["kind"])[2] else "", p)
                 for o, p in zip(objs, op.get("templatePaths") or [], strict=True)]  # fmt: skip
        datas = [body(o) for o in objs]
        interval = (op.get("intervalMilliseconds") or 500) / 1000.0
        number = int(op.get("number", 0))

        def create(i: int) -> str:
            try:
                doc = self.kube.request("POST", colls[i], datas[i], ok=(201,))
                return str(doc["metadata"]["name"])
            except (ApiError, OSError):
                return ""  # upstream ignores a failed create

        def loop() -> None:
            n = 0
            ring = [[""] * max(number, 1) for _ in objs]
            while not self.cancel.wait(interval):
                if op.get("mode") == "create":
                    if number and n >= number:
                        return
                    for i in range(len(objs)):
                        create(i)
                else:
                    slot = n % number
                    for i in range(len(objs)):
                        name = ring[i][slot]
                        if name:
                            self.kube.request("DELETE", f"{colls[i]}/{name}", ok=(200, 202, 404))
                            ring[i][slot] = ""
                        else:
                            ring[i][slot] = create(i)
                n += 1

        self._background(f"churn-{op.index}", loop)

    # ---- createAny, updateAny ------------------------------------------------------------

    def _any(self, op: Op) -> tuple[str, Template, int]:
        """createAny/updateAny: the namespace (created if named), template and count (default 1)."""
        ns = op.get("namespace") or ""
        if ns:
            self._ensure_namespace(ns)
        return ns, template(op.get("templatePath")), int(op.get("count", 1))

    def _op_createAny(self, op: Op) -> None:
        ns, tmpl, count = self._any(op)
        for i in range(count):
            obj = tmpl.object(i, count)
            coll = self.mapper.collection(obj, ns, op.get("templatePath"))
            deadline = time.monotonic() + CREATE_RETRY_S
            while True:
                try:
                    self.kube.request("POST", f"{coll}?fieldValidation=Strict", obj, ok=(201,))
                    break
                except ApiError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(1)

    def _op_updateAny(self, op: Op) -> None:
        ns, tmpl, count = self._any(op)
        rate = int(op.get("updatePerSecond", 0))
        subs = list(op.get("subresources") or [])
        next_t = time.monotonic()
        for i in range(count):
            if rate:
                next_t += 1.0 / rate
                if self.cancel.wait(max(0.0, next_t - time.monotonic())):
                    return
            obj = tmpl.object(i, count)
            coll = self.mapper.collection(obj, ns, op.get("templatePath"))
            item = f"{coll}/{obj['metadata']['name']}"
            q = "?fieldValidation=Strict"
            self.kube.request("PUT", f"{item}/{'/'.join(subs)}{q}" if subs else f"{item}{q}", obj)
            self.kube.request("PUT", f"{item}/status{q}", obj)

    # ---- DRA -----------------------------------------------------------------------------

    def _op_createResourceDriver(self, op: Op) -> None:
        nodes = [n["metadata"]["name"] for n in self._sorted_nodes()]
        # filepath.Match: node names have no separator, so fnmatch's case-sensitive glob matches alike.
        targets = [n for n in nodes if fnmatch.fnmatchcase(n, op.get("nodes"))]
        cap = int(op.get("maxClaimsPerNode", 0))
        path = "/apis/resource.k8s.io/v1/resourceslices"
        self._parallel(lambda n: self.kube.request("POST", path, resource_slice(op.get("driverName"), n, cap)), targets)

    def _op_allocResourceClaims(self, op: Op) -> None:
        ns = op.get("namespace") or ""
        base = "/apis/resource.k8s.io/v1"
        claims = self.kube.request("GET", f"{base}/namespaces/{ns}/resourceclaims" if ns else f"{base}/resourceclaims")
        classes = self.kube.request("GET", f"{base}/deviceclasses")["items"]
        slices = self.kube.request("GET", f"{base}/resourceslices")["items"]
        nodes = [n["metadata"]["name"] for n in self._sorted_nodes()]
        for claim in allocate_claims(claims["items"], classes, slices, nodes, self.rng):
            m = claim["metadata"]
            self.kube.request("PUT", f"{base}/namespaces/{m['namespace']}/resourceclaims/{m['name']}/status", claim)

    def _op_createResourceClaims(self, op: Op) -> None:
        ns = op.get("namespace")
        self._ensure_namespace(ns)
        data = body(typed(self.kube, template(op.get("templatePath")).object(), "ResourceClaim"))
        path = f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims"
        self._parallel(lambda _i: self.kube.request("POST", path, data, ok=(201,)), range(int(op.get("count", 0))))
