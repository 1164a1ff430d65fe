"""The scheduler's own page, on the secure port under the same authorization as /metrics (a
SubjectAccessReview for ``get`` on the path; manifests/ has the ClusterRole).

Paths:

* ``/debug/explain``: the queue (active, backoff, unschedulable, gated, in flight; each pod with
  its reason), the recent decisions, and the nodes drawn as tiles whose bars show the CPU and
  memory already requested, so a person sees at a glance where the room is.
* ``/debug/explain/pods/<namespace>/<name>``: one pod: its latest attempt's score table (raw,
  normalized or weighted scores per plugin, a switch away), its filter verdicts per node and
  plugin, the rejecting plugins with their counts, the same tiles coloured by verdict and
  score, its earlier attempts and where it waits now.
* ``/debug/explain/api/pods/<namespace>/<name>``, ``/debug/explain/api/queue``,
  ``/debug/explain/api/recent``: the same as JSON (``pyscheduler explain`` reads the first).

Plain server-rendered HTML with a little inline JavaScript (a filter box, the score switch, a
refresh toggle); nothing is downloaded from anywhere. Links are relative, so the page also works
through the API server's proxy to the scheduler's pod.
"""

from __future__ import annotations

import datetime
import html
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from scheduler.backend.queue import ACTIVE, BACKOFF, GATED, UNSCHEDULABLE, SchedulingQueue
from scheduler.core.decision import NOT_ASKED, Decision, to_json
from scheduler.framework.interface import QueuedPodInfo
from scheduler.live.decisions import DecisionStore
from scheduler.model.node import NodeInfo

PREFIX = "/debug/explain"
INFLIGHT = "inflight"
MAX_TILES = 400
MAX_QUEUE_ROWS = 500
RECENT = 100
MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class QueueEntry:
    pod: str
    queue: str
    reason: str
    attempts: int
    since: float  # seconds since it was (re)queued


def queue_entries(queue: SchedulingQueue, store: DecisionStore, now: float) -> list[QueueEntry]:
    """Every pending pod with where it waits and why, in flight ones included."""
    out: list[QueueEntry] = []
    for q in [*queue.pending(), *queue.in_flight()]:
        where = queue.where(q.pod.uid)
        out.append(QueueEntry(q.pod.key, where or "?", _reason(queue, store, q, where, now), q.attempts,
                              max(0.0, now - q.timestamp)))
    order = {INFLIGHT: 0, ACTIVE: 1, BACKOFF: 2, UNSCHEDULABLE: 3, GATED: 4}
    out.sort(key=lambda e: (order.get(e.queue, 9), e.pod))
    return out


def _reason(queue: SchedulingQueue, store: DecisionStore, q: QueuedPodInfo, where: str, now: float) -> str:
    plugins = ", ".join(sorted(q.unschedulable_plugins | q.pending_plugins))
    if where == ACTIVE:
        return "waiting for its turn" + (f" (last rejected by {plugins})" if plugins else "")
    if where == BACKOFF:
        left = max(0.0, queue.backoff_expiry(q) - now)
        why = f"after a failure ({plugins})" if plugins else "after an error"
        return f"backing off {left:.1f}s more {why}"
    if where == UNSCHEDULABLE:
        if plugins:
            return f"rejected by {plugins}: waits for a cluster event one of them cares about"
        return "waits for a cluster event or the unschedulable timeout"
    if where == GATED:
        gates = ", ".join(q.pod.scheduling_gates)
        who = q.gating_plugin or "a PreEnqueue plugin"
        return f"gated by {who}" + (f" (schedulingGates: {gates})" if gates else "")
    if where == INFLIGHT:
        att = store.latest(q.pod.key)
        return f"being scheduled ({att.outcome})" if att is not None else "being scheduled"
    return ""


@dataclass(frozen=True, slots=True)
class Tile:
    node: str
    cpu_used: int
    cpu_total: int
    mem_used: int
    mem_total: int
    pods: int
    pods_total: int
    unschedulable: bool


def tiles(nodes: Iterable[NodeInfo]) -> list[Tile]:
    out = []
    for ni in nodes:
        if ni.raw is None:
            continue  # pods point at a node the cache has not seen
        a, r = ni.allocatable, ni.requested
        out.append(Tile(ni.name, r.milli_cpu, a.milli_cpu, r.memory, a.memory, len(ni.pods), a.allowed_pod_number,
                        ni.unschedulable))
    return out


class ExplainPage:
    """The handlers; ``nodes`` returns the cache's NodeInfos (read at request time)."""

    def __init__(
        self,
        store: DecisionStore,
        queue: SchedulingQueue,
        nodes: Callable[[], Iterable[NodeInfo]],
        *,
        identity: str = "",
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.store = store
        self.queue = queue
        self.nodes = nodes
        self.identity = identity
        self.clock = clock or queue.clock

    def routes(self) -> dict[str, Callable[[web.Request], Any]]:
        return {
            PREFIX: self.index,
            f"{PREFIX}/pods/{{namespace}}/{{name}}": self.pod,
            f"{PREFIX}/api/pods/{{namespace}}/{{name}}": self.api_pod,
            f"{PREFIX}/api/queue": self.api_queue,
            f"{PREFIX}/api/recent": self.api_recent,
        }

    # -- JSON --------------------------------------------------------------------------------
    def pod_answer(self, key: str) -> tuple[int, dict[str, Any]]:
        attempts = self.store.attempts(key)
        body: dict[str, Any] = {"pod": key, "scheduler": self.identity, "attempts": [to_json(d) for d in attempts]}
        entry = next((e for e in queue_entries(self.queue, self.store, self.clock()) if e.pod == key), None)
        if entry is not None:
            body["queue"] = {"queue": entry.queue, "reason": entry.reason, "attempts": entry.attempts}
        if not attempts:
            body["message"] = (f"no attempt of pod {key} recorded by this scheduler (it keeps the latest attempts "
                               f"of its last {self.store.max_pods} pods)")
            return 404, body
        return 200, body

    async def api_pod(self, request: web.Request) -> web.Response:
        code, body = self.pod_answer(_key(request))
        return web.json_response(body, status=code, dumps=_dumps)

    async def api_queue(self, _: web.Request) -> web.Response:
        entries = queue_entries(self.queue, self.store, self.clock())
        return web.json_response({"counts": self.queue.counts(), "pods": [
            {"pod": e.pod, "queue": e.queue, "reason": e.reason, "attempts": e.attempts, "since": round(e.since, 3)}
            for e in entries]}, dumps=_dumps)

    async def api_recent(self, _: web.Request) -> web.Response:
        return web.json_response({"decisions": [
            {"pod": s.pod, "attempt": s.attempt, "time": s.time, "outcome": s.outcome, "node": s.node,
             "message": s.message} for s in self.store.recent(RECENT)]}, dumps=_dumps)

    # -- HTML --------------------------------------------------------------------------------
    async def index(self, _: web.Request) -> web.Response:
        now = self.clock()
        entries = queue_entries(self.queue, self.store, now)
        counts = self.queue.counts()
        counts[INFLIGHT] = sum(1 for e in entries if e.queue == INFLIGHT)
        parts = [f"<h1>pyscheduler</h1><p class=sub>{_e(self.identity)} &middot; {_e(_utc(time.time()))}"
                 f" &middot; <a href='explain'>refresh</a></p>",
                 _pod_form()]
        summary = " ".join(f"<span class='count q-{k}'>{_e(k)} <b>{v}</b></span>" for k, v in counts.items())
        parts.append(f"<h2>Queue</h2><p>{summary}</p>")
        rows = "".join(
            f"<tr class='q-{_e(e.queue)}'><td>{_pod_link(e.pod, 'explain/pods/')}</td><td>{_e(e.queue)}</td>"
            f"<td>{_e(e.reason)}</td><td class=n>{e.attempts}</td><td class=n>{e.since:.0f}s</td></tr>"
            for e in entries[:MAX_QUEUE_ROWS])
        more = f"<p>{len(entries) - MAX_QUEUE_ROWS} more not shown</p>" if len(entries) > MAX_QUEUE_ROWS else ""
        parts.append(_filterable("queue", ["pod", "queue", "reason", "attempts", "waiting"], rows,
                                 "no pending pods") + more)
        recent = self.store.recent(RECENT)
        rows = "".join(
            f"<tr class='o-{_e(s.outcome)}'><td>{_e(_utc(s.time))}</td><td>{_pod_link(s.pod, 'explain/pods/')}</td>"
            f"<td class=n>{s.attempt}</td><td>{_e(s.outcome)}</td><td>{_e(s.node or '')}</td>"
            f"<td class=msg>{_e(s.message)}</td></tr>" for s in recent)
        parts.append("<h2>Recent decisions</h2>" + _filterable(
            "recent", ["time (UTC)", "pod", "attempt", "outcome", "node", "message"], rows, "no attempt recorded yet"))
        parts.append("<h2>Nodes</h2><p class=sub>bars: CPU and memory requested out of allocatable</p>")
        parts.append(_tile_grid(tiles(self.nodes()), None, None))
        return _page("pyscheduler: queue and decisions", "".join(parts))

    async def pod(self, request: web.Request) -> web.Response:
        key = _key(request)
        code, body = self.pod_answer(key)
        back = "../../../explain"
        parts = [f"<p class=sub><a href='{back}'>&larr; queue and decisions</a></p>"]
        parts.append(f"<h1>{_e(key)}</h1>")
        q = body.get("queue")
        if q:
            parts.append(f"<p class='now q-{_e(q['queue'])}'>now: <b>{_e(q['queue'])}</b>, {_e(q['reason'])}"
                         f" (attempts {q['attempts']})</p>")
        attempts = self.store.attempts(key)
        if not attempts:
            parts.append(f"<p class=empty>{_e(body['message'])}</p>")
            return _page(f"pyscheduler: {key}", "".join(parts), status=code)
        d = attempts[0]
        latest = self.store.latest(key)
        requests = (latest.pod.requests.milli_cpu, latest.pod.requests.memory) if latest is not None else None
        parts.append(_outcome(d))
        if requests is not None:
            parts.append(f"<p>requests: cpu {_cpu(requests[0])}, memory {_mem(requests[1])}</p>")
        # A placed pod's requests are in the bars already; a pending one's are drawn after them.
        need = None if d.placed else requests
        if d.scores:
            parts.append(_score_table(d))
        parts.append(_rejections(d))
        parts.append(_verdict_grid(d))
        parts.append("<h2>Nodes</h2><p class=sub>colour: chosen, feasible (darker: higher total), rejected, "
                     "not evaluated; bars: CPU and memory requested now and, for a pod not placed, its requests "
                     "after them (blue: room for it, red: none)</p>")
        parts.append(_tile_grid(tiles(self.nodes()), d, need))
        if len(attempts) > 1:
            rows = "".join(
                f"<tr><td class=n>{a.attempt}</td><td>{_e(_utc(a.time))}</td><td>{_e(a.outcome)}</td>"
                f"<td>{_e(a.node or '')}</td><td>{_e(a.nominated)}</td><td>{_e(', '.join(a.victims))}</td>"
                f"<td class=msg>{_e(a.message)}</td></tr>" for a in attempts[1:])
            parts.append("<h2>Earlier attempts</h2>" + _table(
                ["attempt", "time (UTC)", "outcome", "node", "nominated", "victims", "message"], rows))
        return _page(f"pyscheduler: {key}", "".join(parts), status=code)


# ---------------------------------------------------------------------------------------------
# HTML pieces


def _outcome(d: Decision) -> str:
    head = (f"<p class='outcome o-{_e(d.outcome)}'>attempt {d.attempt} at {_e(_utc(d.time))}: <b>{_e(d.outcome)}</b>")
    if d.node:
        head += f" &rarr; <b>{_e(d.node)}</b>"
    head += f" &middot; evaluated {d.evaluated} of {d.num_nodes} nodes, feasible {d.feasible}"
    head += f" &middot; profile {_e(d.profile)}</p>" if d.profile else "</p>"
    if d.message:
        head += f"<pre class=message>{_e(d.message)}</pre>"
    if d.nominated:
        head += (f"<p class=preemption>preemption: nominated <b>{_e(d.nominated)}</b>, victims "
                 f"{_e(', '.join(d.victims)) or 'none'}</p>")
    if d.stages:
        head += "<p>stages: " + ", ".join(f"{_e(k)} <i>{_e(v)}</i>" for k, v in d.stages.items()) + "</p>"
    if d.timings:
        head += "<p>timings: " + ", ".join(f"{_e(k)} {v * 1000:.1f}ms" for k, v in d.timings.items()) + "</p>"
    if d.compact:
        head += "<p class=sub>compacted: the best nodes and per-plugin counts kept</p>"
    return head


def _score_table(d: Decision) -> str:
    switch = ("<p class=switch>show: <label><input type=radio name=score value=final checked> weighted</label> "
              "<label><input type=radio name=score value=normalized> normalized</label> "
              "<label><input type=radio name=score value=raw> raw</label></p>")
    head = "".join(f"<th title='weight {w}'>{_e(p)}<br><small>&times;{w}</small></th>"
                   for p, w in zip(d.plugins, d.weights))
    rows = []
    for row in d.scores:
        norm = d.normalized(row)
        cells = "".join(
            f"<td class=n data-raw='{'' if r == NOT_ASKED else r}' data-normalized='{n}' data-final='{f}'>{f}</td>"
            for r, n, f in zip(row.raw, norm, row.final))
        cls = " class=chosen" if row.node == d.node else ""
        rows.append(f"<tr{cls}><td>{_e(row.node)}</td><td class=n><b>{row.total}</b></td>{cells}</tr>")
    note = f"<p class=sub>{len(d.scores)} of {d.scored} scored nodes, the best first</p>"
    return (f"<h2>Scores</h2>{switch}<table id=scores><thead><tr><th>node</th><th>total</th>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>{note}")


def _rejections(d: Decision) -> str:
    if not d.rejections:
        return ""
    rows = []
    for r in d.rejections:
        reasons = "<br>".join(
            f"{_e(reason or '(no reason)')} <b>({n})</b> <small>{_e(', '.join(r.examples.get(reason, [])))}</small>"
            for reason, n in r.reasons.items())
        rows.append(f"<tr><td>{_e(r.plugin)}</td><td class=n>{r.nodes}</td><td>{reasons}</td></tr>")
    return ("<h2>Rejected by</h2>" + _table(["plugin", "nodes", "reasons (a few nodes each)"], "".join(rows)))


def _verdict_grid(d: Decision) -> str:
    """Node x Filter plugin: passed, the rejection, not run (after a rejection), skipped."""
    if not d.filter_plugins:
        return ""
    skipped = set(d.skipped_filter)
    head = "".join(f"<th>{_e(p)}</th>" for p in d.filter_plugins)
    rows = []
    for row in d.scores:
        cells = "".join("<td class=skip>skip</td>" if p in skipped else "<td class=pass>&#10003;</td>"
                        for p in d.filter_plugins)
        rows.append(f"<tr><td>{_e(row.node)}</td>{cells}</tr>")
    for node, v in d.filtered.items():
        tds: list[str] = []
        after = False
        for p in d.filter_plugins:
            if p in skipped:
                tds.append("<td class=skip>skip</td>")
            elif after:
                tds.append("<td class=notrun>&middot;</td>")
            elif p == v.plugin:
                why = _e(", ".join(v.reasons))
                tds.append(f"<td class=fail title='{why}'>&#10007; {why}</td>")
                after = True
            else:
                tds.append("<td class=pass>&#10003;</td>")
        if v.plugin not in d.filter_plugins:
            # Rejected before Filter (PreFilter, or outside a PreFilterResult).
            tds = [f"<td class=fail colspan={len(d.filter_plugins)}>&#10007; {_e(v.plugin or 'PreFilter')}: "
                   f"{_e(', '.join(v.reasons))}</td>"]
        rows.append(f"<tr><td>{_e(node)}</td>{''.join(tds)}</tr>")
    listed = len(d.scores) + len(d.filtered)
    note = (f"<p class=sub>{listed} nodes listed; {d.filtered_total - len(d.filtered)} more rejected nodes "
            f"are counted above</p>") if d.filtered_total > len(d.filtered) else ""
    return ("<h2>Filter verdicts</h2>" + _filterable("verdicts", ["node", *d.filter_plugins], "".join(rows),
                                                      "no node listed", head_html=f"<th>node</th>{head}") + note)


def _tile_grid(all_tiles: list[Tile], d: Decision | None, need: tuple[int, int] | None) -> str:
    if not all_tiles:
        return "<p class=empty>no nodes</p>"
    rank: dict[str, int] = {}
    shade: dict[str, int] = {}
    if d is not None:
        rank = {row.node: k for k, row in enumerate(d.scores)}
        if d.scores:
            hi, lo = d.scores[0].total, min(r.total for r in d.scores)
            # Five shades from the best total down to the lowest shown: ties look alike.
            shade = {r.node: 1 + (4 * (hi - r.total) // (hi - lo) if hi > lo else 0) for r in d.scores}
        keep = set(rank) | set(d.filtered) | ({d.node} if d.node else set())
        all_tiles.sort(key=lambda t: (t.node not in keep, rank.get(t.node, len(rank)), t.node))
    else:
        all_tiles.sort(key=lambda t: (-_free(t), t.node))
    shown = all_tiles[:MAX_TILES]
    out = []
    for t in shown:
        cls, label = "tile", ""
        if d is not None:
            if t.node == d.node and d.placed:
                cls, label = "tile chosen", "chosen"
            elif t.node in rank:
                total = d.scores[rank[t.node]].total
                cls, label = f"tile feasible f{shade[t.node]}", f"#{rank[t.node] + 1} total {total}"
            elif t.node in d.filtered:
                cls, label = "tile rejected", d.filtered[t.node].plugin
            else:
                cls, label = "tile unseen", "not evaluated" if d.filtered_total <= len(d.filtered) else ""
        if t.unschedulable:
            cls += " cordoned"
        out.append(
            f"<div class='{cls}' title='{_e(t.node)}'><div class=tn>{_e(t.node)}</div>"
            f"<div class=tl>{_e(label)}</div>{_bar('cpu', t.cpu_used, t.cpu_total, _cpu, need and need[0])}"
            f"{_bar('mem', t.mem_used, t.mem_total, _mem, need and need[1])}"
            f"<div class=tp>{t.pods}/{t.pods_total} pods</div></div>")
    more = (f"<p class=sub>{len(shown)} of {len(all_tiles)} nodes drawn</p>" if len(all_tiles) > len(shown) else "")
    return f"<div class=tiles>{''.join(out)}</div>{more}"


def _free(t: Tile) -> float:
    cpu = 1 - t.cpu_used / t.cpu_total if t.cpu_total else 0.0
    mem = 1 - t.mem_used / t.mem_total if t.mem_total else 0.0
    return min(cpu, mem)


def _bar(name: str, used: int, total: int, fmt: Callable[[int], str], need: int | None = None) -> str:
    """Requested out of allocatable; with ``need``, the pod's request drawn after it."""
    pct = min(100, round(100 * used / total)) if total > 0 else 100
    level = "hi" if pct >= 90 else ("mid" if pct >= 60 else "lo")
    ghost = ""
    if need:
        fits = used + need <= total
        width = min(100 - pct, round(100 * need / total)) if total > 0 else 0
        ghost = (f"<span class='need {'fits' if fits else 'over'}' style='left:{pct}%;width:{max(width, 2)}%'>"
                 "</span>")
    return (f"<div class=bar title='{name} {fmt(used)} of {fmt(total)} requested'><span class='fill {level}' "
            f"style='width:{pct}%'></span>{ghost}<span class=bl>{name} {fmt(total - used)} free</span></div>")


def _cpu(m: int) -> str:
    return f"{m}m" if m < 1000 or m % 1000 else f"{m // 1000}"


def _mem(b: int) -> str:
    return f"{b / (1 << 30):.1f}Gi" if b >= 1 << 30 else f"{b // MIB}Mi"


def _pod_form() -> str:
    return ("<form class=podform onsubmit=\"var v=this.pod.value.trim();if(v.indexOf('/')<0)v='default/'+v;"
            "location.href='explain/pods/'+v;return false;\">explain a pod: <input name=pod "
            "placeholder='namespace/name' size=40> <button>explain</button></form>")


def _pod_link(key: str, base: str) -> str:
    ns, _, name = key.partition("/")
    return f"<a href='{_e(base + ns + '/' + name)}'>{_e(key)}</a>"


def _table(headers: list[str], rows: str) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _filterable(name: str, headers: list[str], rows: str, empty: str, head_html: str | None = None) -> str:
    if not rows:
        return f"<p class=empty>{_e(empty)}</p>"
    head = head_html or "".join(f"<th>{_e(h)}</th>" for h in headers)
    return (f"<input class=filter data-table='{name}' placeholder='filter' size=30>"
            f"<table id='{name}'><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")


def _key(request: web.Request) -> str:
    return f"{request.match_info['namespace']}/{request.match_info['name']}"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _utc(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.2em 2em;color:#222;background:#fafafa}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.15em;margin:1.4em 0 .4em;border-bottom:1px solid #ddd}
.sub{color:#666;font-size:.9em}.empty{color:#888;font-style:italic}
table{border-collapse:collapse;background:#fff;margin:.3em 0}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f0f0f0;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}
td.msg{max-width:60em}tr.chosen td{background:#e3efff;font-weight:600}
td.pass{color:#1a7f37;text-align:center}td.fail{color:#b00020;background:#fff0f0}
td.notrun{color:#bbb;text-align:center}td.skip{color:#999;text-align:center}
.count{display:inline-block;margin-right:1em;padding:2px 8px;border-radius:10px;background:#eee}
.q-unschedulable .count,.count.q-unschedulable{background:#ffe3e3}.count.q-backoff{background:#fff3cd}
.count.q-active{background:#e3f5e3}.count.q-gated{background:#eee}.count.q-inflight{background:#e3efff}
.outcome{font-size:1.1em}.o-scheduled b:first-of-type{color:#1a7f37}.o-unschedulable b:first-of-type{color:#b00020}
pre.message{white-space:pre-wrap;background:#fff0f0;border-left:4px solid #b00020;padding:.5em .8em}
.preemption{background:#fff8e1;border-left:4px solid #f0a000;padding:.3em .8em}
.tiles{display:flex;flex-wrap:wrap;gap:6px}
.tile{width:150px;border:2px solid #ccc;border-radius:6px;padding:4px 6px;background:#fff;font-size:12px}
.tile.chosen{border-color:#1f6feb;background:#e3efff}.tile.rejected{border-color:#d33;background:#fff0f0}
.tile.feasible{border-color:#2da44e}.tile.f1{background:#c9f0d3}.tile.f2{background:#d9f5e0}
.tile.f3{background:#e7f9ec}.tile.f4,.tile.f5{background:#f3fcf5}.tile.unseen{opacity:.55}
.tile.cordoned{border-style:dashed}
.tn{font-weight:600;overflow-wrap:anywhere}.tl{color:#555;min-height:1.2em}
.bar{position:relative;height:14px;background:#eee;border-radius:3px;margin:2px 0;overflow:hidden}
.fill{position:absolute;left:0;top:0;bottom:0}.fill.lo{background:#7fc48a}.fill.mid{background:#e6b84c}
.fill.hi{background:#e0665e}.need{position:absolute;top:0;bottom:0;opacity:.75}
.need.fits{background:#5b8def}.need.over{background:repeating-linear-gradient(45deg,#d33 0 3px,#fbb 3px 6px)}
td:first-child{white-space:nowrap}.bl{position:relative;padding-left:4px;font-size:11px}
.tp{color:#666}input.filter{margin:.2em 0}.switch label{margin-right:.8em}.podform{margin:.8em 0}
"""

_SCRIPT = """
document.querySelectorAll('input.filter').forEach(function(box){
  box.addEventListener('input',function(){
    var t=document.getElementById(box.dataset.table),q=box.value.toLowerCase();
    t.querySelectorAll('tbody tr').forEach(function(r){
      r.style.display=r.textContent.toLowerCase().indexOf(q)>=0?'':'none';});});});
document.querySelectorAll('input[name=score]').forEach(function(r){
  r.addEventListener('change',function(){
    document.querySelectorAll('#scores td[data-raw]').forEach(function(c){
      c.textContent=c.dataset[r.value];});});});
var auto=document.getElementById('auto');
if(auto){auto.checked=location.hash==='#auto';
  auto.addEventListener('change',function(){location.hash=auto.checked?'auto':'';});
  setInterval(function(){if(auto.checked)location.reload();},5000);}
"""


def _page(title: str, body: str, status: int = 200) -> web.Response:
    doc = (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{_e(title)}</title>"
           f"<meta name=viewport content='width=device-width,initial-scale=1'><style>{_STYLE}</style></head>"
           f"<body>{body}<p class=sub><label><input type=checkbox id=auto> refresh every 5s</label></p>"
           f"<script>{_SCRIPT}</script></body></html>")
    return web.Response(status=status, body=doc.encode(), content_type="text/html", charset="utf-8")

