// mcrib operator dashboard: history and decisions.
//
// Polls v1/history and v1/events every 2 s, draws the last half hour as
// inline SVG charts and lists mcrib's latest decisions, newest first.
// Like dashboard.js it sets data only through textContent and attributes,
// never as HTML, and says in #ops-error when a fetch fails.
"use strict";

(function () {
  const POLL_MS = 2000;
  const TIMEOUT_MS = 5000;
  const MAX_ROWS = 200;
  // The SVG namespace is taken from the page's own <svg> elements, so the
  // script names no URL at all.
  let svgNS = "";
  const W = 360;
  const H = 90;
  const PAD = 4;

  // The charts: each draws one or two series of v1/history.
  const CHARTS = [
    { id: "chart-hitrate", title: "Hit rate", series: [{ key: "hit_rate", cls: "line-hit", label: "hit rate" }], max: 1, empty: "unknown: no traffic measured yet", fmt: (v) => (v * 100).toFixed(1) + " %" },
    { id: "chart-bootlimit", title: "Boot limit (boots/s)", series: [{ key: "boot_limit", cls: "line-limit", label: "limit" }], fmt: fmtNum },
    { id: "chart-boots", title: "Boots per interval", series: [{ key: "admissions", cls: "line-admit", label: "admitted" }, { key: "refusals", cls: "line-refuse", label: "refused" }], fmt: fmtNum },
    { id: "chart-moves", title: "Flushes and replacements per interval", series: [{ key: "flushes", cls: "line-flush", label: "flushes" }, { key: "replacements", cls: "line-replace", label: "replacements" }], fmt: fmtNum },
  ];

  const byId = (id) => document.getElementById(id);
  let events = [];
  let lastSeq = 0;

  function fmtNum(v) {
    if (typeof v !== "number" || !isFinite(v)) return "—";
    return Number.isInteger(v) ? String(v) : v.toFixed(v < 10 ? 2 : 1);
  }

  function fmtSpan(s) {
    return s >= 120 ? Math.round(s / 60) + " min" : Math.round(s) + " s";
  }

  function pad(n) {
    return String(n).padStart(2, "0");
  }

  function fmtTime(t) {
    const d = new Date(Date.parse(String(t)));
    if (isNaN(d.getTime())) return "—";
    return pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + ":" + pad(d.getUTCSeconds());
  }

  function svg(tag, attrs, text) {
    const n = document.createElementNS(svgNS, tag);
    for (const k of Object.keys(attrs)) n.setAttribute(k, String(attrs[k]));
    if (text !== undefined) n.textContent = text;
    return n;
  }

  function el(tag, cls, text) {
    const n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined) n.textContent = String(text);
    return n;
  }

  async function fetchJSON(path) {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), TIMEOUT_MS);
    try {
      const resp = await fetch(path, { cache: "no-store", signal: ctl.signal, headers: { Accept: "application/json" } });
      const body = await resp.json().catch(() => null);
      if (!resp.ok) throw new Error("GET " + path + ": HTTP " + resp.status + (body && body.error ? ": " + body.error : ""));
      if (body === null) throw new Error("GET " + path + ": the answer is not JSON");
      return body;
    } catch (e) {
      if (ctl.signal.aborted) throw new Error("GET " + path + ": no answer within " + TIMEOUT_MS / 1000 + " s");
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  // drawChart draws chart c of history h into its <figure>: one polyline
  // per run of known values (an unknown hit rate leaves a gap).
  function drawChart(c, h) {
    const fig = byId(c.id);
    const root = fig && fig.querySelector("svg");
    if (!root) return;
    svgNS = root.namespaceURI;
    const times = Array.isArray(h.at) ? h.at.map((t) => Date.parse(String(t))) : [];
    const n = times.length;
    let max = c.max || 0;
    for (const s of c.series) {
      for (const v of h[s.key] || []) if (typeof v === "number" && isFinite(v)) max = Math.max(max, v);
    }
    if (max <= 0) max = 1;
    // The x axis spans the window, or less while the history is younger
    // (at least ten intervals), so that a fresh process shows its points.
    const end = n ? times[n - 1] : Date.now();
    const window = (Number(h.window_seconds) || 1800) * 1000;
    const step = (Number(h.interval_seconds) || 1) * 1000;
    const span = Math.min(window, Math.max(n ? end - times[0] : 0, 10 * step));
    const x = (t) => PAD + ((W - 2 * PAD) * Math.max(0, span - (end - t))) / span;
    const y = (v) => H - PAD - ((H - 2 * PAD) * v) / max;

    root.setAttribute("viewBox", "0 0 " + W + " " + H);
    root.setAttribute("data-points", String(n));
    root.replaceChildren();
    root.append(svg("rect", { x: 0, y: 0, width: W, height: H, class: "chart-bg" }));
    root.append(svg("line", { x1: PAD, y1: H - PAD, x2: W - PAD, y2: H - PAD, class: "chart-axis" }));
    root.append(svg("text", { x: PAD + 2, y: 12, class: "chart-label" }, "max " + c.fmt(max)));
    root.append(svg("text", { x: W - PAD - 2, y: H - PAD - 3, class: "chart-label chart-label-end" }, "last " + fmtSpan(span / 1000)));
    const legend = [];
    for (const s of c.series) {
      const vals = h[s.key] || [];
      let run = [];
      const flush = () => {
        if (run.length === 1) root.append(svg("circle", { cx: run[0][0], cy: run[0][1], r: 2, class: s.cls, "data-series": s.key }));
        if (run.length > 1) root.append(svg("polyline", { points: run.map((p) => p[0].toFixed(1) + "," + p[1].toFixed(1)).join(" "), class: s.cls, "data-series": s.key }));
        run = [];
      };
      for (let i = 0; i < n; i++) {
        const v = vals[i];
        if (typeof v !== "number" || !isFinite(v)) {
          flush();
          continue;
        }
        run.push([x(times[i]), y(v)]);
      }
      flush();
      const latest = n ? vals[n - 1] : null;
      legend.push(s.label + " " + (typeof latest === "number" && isFinite(latest) ? c.fmt(latest) : "unknown"));
    }
    if (!root.querySelector("polyline, circle")) {
      root.append(svg("text", { x: W / 2, y: H / 2, class: "chart-label chart-empty" }, c.empty || "no data yet"));
    }
    const cap = fig.querySelector("figcaption");
    if (cap) cap.textContent = c.title + ": " + legend.join(", ");
  }

  // renderEvents lists the events, newest first, each with its time, kind,
  // node, who and reason.
  function renderEvents() {
    const tbody = byId("events");
    if (!tbody) return;
    const rows = events.slice(-MAX_ROWS).reverse().map((e) => {
      const tr = el("tr", "event-" + String(e.kind || "").replace(/[^a-z]/g, ""));
      tr.setAttribute("data-kind", String(e.kind || ""));
      tr.setAttribute("data-seq", String(e.seq || ""));
      let node = String(e.node || "—");
      if (typeof e.slot === "number") node += " (slot " + e.slot + ")";
      tr.append(el("td", "mono", fmtTime(e.at)), el("td", "kind", e.kind || "—"), el("td", "mono", node),
        el("td", "muted", e.who || "—"), el("td", null, e.reason || "—"));
      return tr;
    });
    if (rows.length === 0) {
      const td = el("td", null, "no decision yet");
      td.colSpan = 5;
      const tr = el("tr", "empty");
      tr.append(td);
      rows.push(tr);
    }
    tbody.replaceChildren(...rows);
    const sum = byId("events-summary");
    if (sum) sum.textContent = "(" + events.length + ")";
  }

  async function poll() {
    const failures = [];
    try {
      const h = await fetchJSON("v1/history");
      for (const c of CHARTS) drawChart(c, h);
    } catch (e) {
      failures.push((e && e.message) || String(e));
    }
    try {
      const evs = await fetchJSON("v1/events?since=" + lastSeq);
      if (Array.isArray(evs) && evs.length) {
        // Numbers at or below the last one seen: mcrib restarted and its
        // events start again; show the new process's only.
        const restarted = evs.some((e) => (Number(e.seq) || 0) <= lastSeq);
        events = (restarted ? evs : events.concat(evs)).slice(-MAX_ROWS);
        lastSeq = Math.max(...evs.map((e) => Number(e.seq) || 0));
      }
      renderEvents();
    } catch (e) {
      failures.push((e && e.message) || String(e));
    }
    const err = byId("ops-error");
    if (err) {
      err.textContent = failures.length ? "history or decisions not available: " + failures.join("; ") : "";
      err.hidden = failures.length === 0;
    }
    setTimeout(poll, POLL_MS);
  }

  poll();
})();
