// mcrib operator dashboard.
//
// Polls the read API (v1/status, v1/slotmap, v1/ratelimit) every 2 s and
// renders it. Every piece of data reaches the page through textContent or
// setAttribute; nothing the server sends is ever parsed as HTML. When a
// fetch fails the page says so in #error and greys out what is stale, so an
// operator never reads old data without knowing it.
"use strict";

(function () {
  const POLL_MS = 2000;
  const TIMEOUT_MS = 5000;
  const RECONCILE_OLD_S = 10;
  const SOURCES = { status: "v1/status", slotmap: "v1/slotmap", ratelimit: "v1/ratelimit" };

  // last holds the newest good answer of each source: {body, offset, at}
  // where offset is server clock minus local clock (from the Date header).
  const last = { status: null, slotmap: null, ratelimit: null };
  // fresh says whether the latest fetch of each source succeeded.
  const fresh = { status: false, slotmap: false, ratelimit: false };
  // rowSig remembers what each table row shows, so unchanged rows are left
  // alone and an operator can select and copy text between polls.
  const rowSig = new WeakMap();

  const byId = (id) => document.getElementById(id);

  function setText(node, text) {
    const s = String(text);
    if (node.textContent !== s) node.textContent = s;
  }

  function setShown(node, shown) {
    if (node.hidden === shown) node.hidden = !shown;
  }

  function setClass(node, cls, on) {
    node.classList.toggle(cls, Boolean(on));
  }

  // el builds an element; children that are strings become text nodes.
  function el(tag, cls, ...children) {
    const n = document.createElement(tag);
    if (cls) n.className = cls;
    for (const c of children) {
      if (c === null || c === undefined) continue;
      n.append(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return n;
  }

  function str(v) {
    return typeof v === "string" ? v : v === null || v === undefined ? "" : String(v);
  }

  function num(v) {
    return typeof v === "number" && isFinite(v) ? v : null;
  }

  function fmtNum(v) {
    const n = num(v);
    if (n === null) return "—";
    return Number.isInteger(n) ? String(n) : n.toFixed(n < 10 ? 2 : 1);
  }

  function fmtRate(v) {
    const n = num(v);
    return n === null ? "unknown" : (n * 100).toFixed(1) + " %";
  }

  // fmtSeconds renders an age in seconds, with minutes or hours added
  // when it is long.
  function fmtSeconds(s) {
    if (s < 120) return s + " s";
    return s + " s (" + fmtAge(s) + ")";
  }

  // fmtAge renders a number of seconds for a person.
  function fmtAge(s) {
    if (s < 120) return s + " s";
    const m = Math.floor(s / 60);
    if (m < 120) return m + " min";
    const h = Math.floor(m / 60);
    if (h < 48) return h + " h " + (m % 60) + " min";
    return Math.floor(h / 24) + " d " + (h % 24) + " h";
  }

  function pad(n) {
    return String(n).padStart(2, "0");
  }

  function fmtUTC(ms) {
    const d = new Date(ms);
    return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()) + " " +
      pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + ":" + pad(d.getUTCSeconds()) + " UTC";
  }

  // serverNow is the current time on the server's clock, as best known.
  function serverNow() {
    const src = last.status || last.slotmap || last.ratelimit;
    return Date.now() + (src ? src.offset : 0);
  }

  // ageOf returns whole seconds since the RFC 3339 time t on the server's
  // clock, or null when t is missing or unreadable.
  function ageOf(t) {
    if (typeof t !== "string" || t === "") return null;
    const ms = Date.parse(t);
    if (isNaN(ms)) return null;
    return Math.max(0, Math.floor((serverNow() - ms) / 1000));
  }

  function fmtWhen(t) {
    const ms = Date.parse(str(t));
    if (isNaN(ms)) return str(t) || "—";
    return fmtUTC(ms) + " (" + fmtAge(ageOf(t)) + " ago)";
  }

  async function fetchJSON(path) {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), TIMEOUT_MS);
    try {
      let resp;
      let text;
      try {
        resp = await fetch(path, { cache: "no-store", signal: ctl.signal, headers: { Accept: "application/json" } });
        text = await resp.text();
      } catch (e) {
        const why = ctl.signal.aborted ? "no answer within " + TIMEOUT_MS / 1000 + " s" : (e && e.message) || String(e);
        throw new Error("GET " + path + ": " + why);
      }
      let body = null;
      try {
        body = JSON.parse(text);
      } catch (e) {
        body = null;
      }
      if (!resp.ok) {
        const msg = body && typeof body.error === "string" ? body.error : text.trim().slice(0, 200);
        throw new Error("GET " + path + ": HTTP " + resp.status + (msg ? ": " + msg : ""));
      }
      if (body === null || typeof body !== "object") throw new Error("GET " + path + ": the answer is not JSON");
      const date = Date.parse(resp.headers.get("Date") || "");
      const now = Date.now();
      return { body: body, offset: isNaN(date) ? 0 : date - now, at: now };
    } finally {
      clearTimeout(timer);
    }
  }

  // ---- headline band and banners (from v1/status) ----

  function renderStatus() {
    const st = last.status ? last.status.body : null;
    if (!st) return;
    setText(byId("pool"), str(st.pool) || "—");

    const leader = byId("leader");
    const lid = str(st.leader_id);
    if (st.leader === true) {
      setText(leader, "yes" + (lid ? " (" + lid + ")" : ""));
    } else if (lid) {
      setText(leader, "no, leader is " + lid);
    } else {
      setText(leader, "no, NO LEADER KNOWN");
    }
    setClass(leader, "good", st.leader === true);
    setClass(leader, "bad", st.leader !== true && !lid);

    setText(byId("generation"), num(st.generation) === null ? "unknown" : String(st.generation));

    const rec = byId("reconcile");
    const age = ageOf(st.last_reconcile_at);
    setText(rec, age === null ? "never" : fmtSeconds(age) + " ago");
    setClass(rec, "bad", age === null || age > RECONCILE_OLD_S);
    setClass(rec, "good", age !== null && age <= RECONCILE_OLD_S);

    const consul = byId("consul");
    setText(consul, st.consul_reachable === true ? "reachable" : "UNREACHABLE");
    setClass(consul, "good", st.consul_reachable === true);
    setClass(consul, "bad", st.consul_reachable !== true);

    setText(byId("hitrate"), fmtRate(st.hit_rate));

    // The hit rate counts the gets that reached a memcached; the slots
    // whose keys reach none stand beside it.
    const unserved = byId("unserved");
    const nu = num(st.slots_unserved);
    setText(unserved, unservedText(nu, num(st.num_slots)));
    setClass(unserved, "bad", nu !== null && nu > 0);
    setClass(unserved, "good", nu === 0);

    const vacant = byId("vacant");
    const nv = num(st.vacant_slots);
    setText(vacant, nv === null ? "unknown" : String(nv));
    setClass(vacant, "bad", nv !== null && nv > 0);
    setClass(vacant, "good", nv === 0);

    const blocked = byId("blocked");
    const nb = num(st.replacements_blocked);
    setText(blocked, nb === null ? "unknown" : String(nb));
    setClass(blocked, "warn", nb !== null && nb > 0);

    const fz = st.freeze && typeof st.freeze === "object" ? st.freeze : {};
    const frozen = st.frozen === true;
    setShown(byId("frozen-banner"), frozen);
    setText(byId("frozen-reason"), str(fz.reason) || "(no reason given)");
    setText(byId("frozen-by"), str(fz.by) || "(unknown)");
    setText(byId("frozen-at"), fz.at ? fmtWhen(fz.at) : "(unknown)");

    setShown(byId("autofrozen-banner"), st.auto_frozen === true);
    setText(byId("autofrozen-reason"), str(st.auto_freeze_reason) || "(no reason given)");

    setShown(byId("fault-banner"), st.discovery_fault === true);
    setText(byId("fault-reason"), str(st.discovery_fault_reason) || "(no reason given)");

    const zoneAlert = str(st.zone_alert);
    setShown(byId("zonealert-banner"), zoneAlert !== "");
    setText(byId("zonealert"), zoneAlert);

    const lastErr = str(st.last_error);
    setShown(byId("lasterror-banner"), lastErr !== "");
    setText(byId("lasterror"), lastErr);

    const flags = [];
    if (frozen) flags.push("FROZEN");
    if (st.auto_frozen === true) flags.push("AUTO-FROZEN");
    if (st.discovery_fault === true) flags.push("DISCOVERY FAULT");
    if (zoneAlert !== "") flags.push("ZONE ALERT");
    document.title = (flags.length ? flags.join(", ") + " · " : "") + "mcrib " + (str(st.pool) || "");
  }

  // unservedText is the slots unserved as a share of the slots, as the
  // CLI says it: "1 of 4 (25 %)"; "unknown" when the server did not say.
  function unservedText(n, slots) {
    if (n === null) return "unknown";
    if (slots === null || slots <= 0) return String(n);
    if (n === 0) return "0 of " + slots;
    return n + " of " + slots + " (" + (Math.round(1000 * n / slots) / 10) + " %)";
  }

  // ---- tables ----

  // syncRows makes tbody show rows (each {sig, build}); a row whose
  // signature did not change keeps its element.
  function syncRows(tbody, rows) {
    const existing = Array.from(tbody.children);
    rows.forEach((row, i) => {
      const cur = existing[i];
      if (cur && rowSig.get(cur) === row.sig) return;
      const tr = row.build();
      rowSig.set(tr, row.sig);
      if (cur) tbody.replaceChild(tr, cur);
      else tbody.appendChild(tr);
    });
    for (let i = rows.length; i < existing.length; i++) existing[i].remove();
  }

  function emptyRow(cols, text) {
    return {
      sig: "empty:" + text,
      build: () => {
        const td = el("td", null, text);
        td.colSpan = cols;
        return el("tr", "empty", td);
      },
    };
  }

  function nodesById() {
    const m = new Map();
    const st = last.status ? last.status.body : null;
    if (st && Array.isArray(st.nodes)) {
      for (const n of st.nodes) if (n && typeof n === "object") m.set(str(n.id), n);
    }
    return m;
  }

  function stateCell(n) {
    if (!n) return el("td", null, el("span", "pill state-unknown", "unknown"));
    const state = str(n.state) || "unknown";
    const td = el("td", null, el("span", "pill state-" + state.replace(/[^a-z]/g, ""), state));
    const absent = ageOf(n.absent_since);
    if (absent !== null) td.append(el("span", "muted small", " absent " + fmtAge(absent)));
    const held = heldSentence(n);
    const hold = num(n.hold_remaining_seconds);
    if (held !== "") td.append(el("span", "pill state-hold", held));
    else if (hold !== null) td.append(el("span", "pill state-hold", hold > 0 ? "hold " + fmtAge(Math.ceil(hold)) + " left" : "hold over: replacing"));
    if (n.flush_pending === true) td.append(el("span", "pill state-flushpending", flushText(n)));
    if (num(n.incoming) !== null) {
      const at = Date.parse(str(n.serves_at));
      td.append(el("span", "pill state-warmsource", "announced to slot " + n.incoming + (isNaN(at) ? "" : ", serves from " + fmtUTC(at))));
    }
    if (num(n.warming) !== null) {
      const until = Date.parse(str(n.warming_until));
      td.append(el("span", "pill state-warmsource", "warm source of slot " + n.warming + (isNaN(until) ? "" : " until " + fmtUTC(until))));
    }
    if (n.drained === true) td.append(el("span", "pill state-drained", "zone drained"));
    return td;
  }

  // flushText says what a node's owed flush waits for, as the CLI does:
  // the node to answer, a freeze, or the leader's next pass.
  function flushText(n) {
    const st = last.status ? last.status.body : {};
    if (n.reachable !== true) return "flush pending: when it answers";
    if (st.frozen === true) return "flush pending: held back by the freeze";
    if (st.auto_frozen === true) return "flush pending: held back by the automatic freeze";
    return "flush pending: at the next pass";
  }

  // heldSentence says what a held node waits for: when its slot goes to a
  // spare if it does not return (held_until), or that it keeps the slot
  // while it answers; "" for a node that is not held, or a server that
  // does not send held_until.
  function heldSentence(n) {
    if (str(n.state) !== "held") return "";
    if (typeof n.held_until === "string" && n.held_until !== "") {
      const hold = num(n.hold_remaining_seconds);
      const left = hold !== null ? Math.ceil(hold) : Math.ceil((Date.parse(n.held_until) - serverNow()) / 1000);
      if (!(left > 0)) return "held: its hold is over, replaced as soon as a spare allows";
      return "held, replaced in " + fmtAge(left) + " if it does not return";
    }
    if (n.reachable === true && num(n.hold_remaining_seconds) === null) return "held: absent from Consul but answering, it keeps its slot";
    return "";
  }

  function reachableCell(n) {
    if (!n) return el("td", "muted", "—");
    return n.reachable === true ? el("td", "ok", "yes") : el("td", "bad-text", "NO");
  }

  function consulCell(n) {
    if (!n) return el("td", "muted", "—");
    const c = str(n.consul) || "—";
    return el("td", c === "present" ? "ok" : "warn-text", c);
  }

  function flapsCell(n) {
    if (!n) return el("td", "num muted", "—");
    const td = el("td", "num", fmtNum(n.flaps));
    if (n.suppressed === true) td.append(el("span", "pill state-suppressed", "suppressed"));
    return td;
  }

  function nodeSig(n) {
    if (!n) return "";
    return [n.state, n.reachable, n.consul, n.flaps, n.suppressed, ageOf(n.absent_since),
      Math.ceil(num(n.hold_remaining_seconds) || 0), n.flush_pending, n.drained, n.warming, str(n.held_until), str(n.warming_until),
      n.incoming, str(n.serves_at)].join("|");
  }

  // nodeCell shows a slot's holder and, while the slot warms, the old
  // holder it reads through to and until when (once the warming ended
  // early, until when it is still written); while a node is announced to
  // the slot (incoming), which and from when it serves.
  function nodeCell(id, warm, incoming) {
    const td = el("td", "mono", id);
    if (warm) {
      const ended = Date.parse(str(warm.ended_at));
      const until = Date.parse(str(warm.until));
      if (!isNaN(ended)) {
        td.append(el("span", "pill state-warmsource",
          "warming from " + (str(warm.node_id) || "?") + " ended " + fmtUTC(ended) + ", still written until " + fmtUTC(ended + 12000)));
      } else {
        td.append(el("span", "pill state-warmsource",
          "warming from " + (str(warm.node_id) || "?") + " until " + (isNaN(until) ? "?" : fmtUTC(until))));
      }
    }
    if (incoming) {
      const at = Date.parse(str(incoming.serves_at));
      td.append(el("span", "pill state-announced",
        "announced: " + (str(incoming.node_id) || "?") + " serves from " + (isNaN(at) ? "?" : fmtUTC(at))));
    }
    return td;
  }

  // slotCell shows a slot's number, and whether it is a twin (slot s + N
  // of a resize from N slots, on slot s's node until it splits) or has one.
  function slotCell(slot, twinOf, twin) {
    const td = el("td", "num", String(slot));
    if (twinOf !== null) td.append(el("span", "pill state-twin", "twin of " + twinOf));
    else if (twin !== null) td.append(el("span", "pill state-twin", "twin " + twin));
    return td;
  }

  // ---- roll (from v1/status) ----

  // rollNodeText says where one node of a roll stands: "released mc-2
  // (slot 3 moved to mc-7): restart it now".
  function rollNodeText(n) {
    let text = (str(n.state) || "unknown") + " " + (str(n.node_id) || "?");
    const slot = num(n.slot);
    if (slot !== null) text += " (slot " + slot + (str(n.to) ? " to " + str(n.to) : "") + ")";
    if (str(n.state) === "released") text += ": restart it now" + (n.released_at ? ", released " + fmtWhen(n.released_at) : "");
    return text;
  }

  function renderRoll() {
    const st = last.status ? last.status.body : null;
    if (!st) return;
    const r = st.roll && typeof st.roll === "object" ? st.roll : null;
    setShown(byId("rl-none"), !r);
    setShown(byId("roll"), Boolean(r));
    setText(byId("rl-none"), "none under way");
    const nodes = r && Array.isArray(r.nodes) ? r.nodes : [];
    if (r) {
      const state = str(r.state) || "unknown";
      const pill = byId("rl-state");
      setText(pill, state);
      const cls = "pill roll-" + state.replace(/[^a-z]/g, "");
      if (pill.className !== cls) pill.className = cls;
      const restarted = nodes.filter((n) => str(n.state) === "restarted").length;
      const skipped = nodes.filter((n) => str(n.state) === "skipped").length;
      setText(byId("rl-progress"), restarted + " of " + nodes.length + " restarted" + (skipped ? ", " + skipped + " skipped" : ""));
      const current = nodes.find((n) => str(n.state) === "moving" || str(n.state) === "released");
      setShown(byId("rl-now-row"), Boolean(current));
      setText(byId("rl-now"), current ? rollNodeText(current) : "");
      const blocked = str(r.blocked);
      setShown(byId("rl-blocked-row"), blocked !== "");
      setText(byId("rl-blocked"), blocked);
      const list = byId("rl-nodes");
      const items = nodes.map((n) => el("li", "roll-node-" + (str(n.state) || "unknown").replace(/[^a-z]/g, ""), rollNodeText(n)));
      list.replaceChildren(...items);
      setText(byId("rl-timeout"), str(r.restart_timeout) || "?");
      setText(byId("rl-reason"), str(r.reason) || "(no reason given)");
      setText(byId("rl-by"), (str(r.by) ? "by " + str(r.by) : "") + (r.at ? " at " + fmtWhen(r.at) : ""));
    }
    const summary = byId("roll-summary");
    setText(summary, r ? "(" + (str(r.state) || "unknown") + ")" : "");
    setClass(summary, "bad-text", Boolean(r) && str(r.blocked) !== "");
  }

  // ---- resize and capacity (from v1/status) ----

  // twinsText says where a resize's splits stand: "3 twins left, 1 split".
  function twinsText(r) {
    const left = num(r.twins), split = num(r.split);
    if (left === null || split === null) return "unknown";
    return left + (left === 1 ? " twin" : " twins") + " left, " + split + " split";
  }

  function renderResize() {
    const st = last.status ? last.status.body : null;
    if (!st) return;
    const r = st.resize && typeof st.resize === "object" ? st.resize : null;
    setShown(byId("rs-none"), !r);
    setShown(byId("resize"), Boolean(r));
    setText(byId("rs-none"), "none under way");
    if (r) {
      const state = str(r.state) || "unknown";
      const pill = byId("rs-state");
      setText(pill, state);
      const cls = "pill resize-" + state.replace(/[^a-z]/g, "");
      if (pill.className !== cls) pill.className = cls;
      setText(byId("rs-slots"), fmtNum(r.from) + " → " + fmtNum(r.to));
      setText(byId("rs-twins"), twinsText(r));
      const from = num(r.from), pct = num(r.step_percent);
      const size = from !== null && pct !== null ? Math.max(1, Math.ceil(from * pct / 100)) : null;
      setText(byId("rs-steps"), fmtNum(r.step_percent) + " %" + (size !== null ? " (" + size + (size === 1 ? " twin)" : " twins)") : "") +
        " every " + (str(r.step_interval) || "?"));
      setText(byId("rs-last"), r.last_step_at ? fmtWhen(r.last_step_at) : "none yet");
      // A split step waits for the step interval: say when the next is due.
      let next = "";
      const lastAt = Date.parse(str(r.last_step_at)), every = stepSeconds(str(r.step_interval));
      if (state === "splitting" && str(r.blocked) === "" && num(r.twins) > 0 && !isNaN(lastAt) && every !== null) {
        const left = Math.ceil((lastAt + every * 1000 - serverNow()) / 1000);
        next = left > 0 ? "next step in " + fmtAge(left) : "next step due";
      }
      setText(byId("rs-next"), next);
      const blocked = str(r.blocked), warning = str(r.warning);
      setShown(byId("rs-blocked-row"), blocked !== "");
      setText(byId("rs-blocked"), blocked);
      setShown(byId("rs-warning-row"), warning !== "");
      setText(byId("rs-warning"), warning);
      setText(byId("rs-reason"), str(r.reason) || "(no reason given)");
      setText(byId("rs-by"), (str(r.by) ? "by " + str(r.by) : "") + (r.at ? " at " + fmtWhen(r.at) : ""));
    }
    const summary = byId("resize-summary");
    setText(summary, r ? "(" + (str(r.state) || "unknown") + ")" : "");
    setClass(summary, "bad-text", Boolean(r) && str(r.blocked) !== "");

    const cap = st.capacity && typeof st.capacity === "object" ? st.capacity : null;
    setText(byId("cap-slots"), cap ? fmtNum(cap.slots) : "unknown");
    setText(byId("cap-nodes"), cap ? fmtNum(cap.nodes) : "unknown");
    const ready = num(cap && cap.spares_ready), nodes = num(cap && cap.nodes);
    setText(byId("cap-spares"), !cap ? "unknown" : ready === null ? "—" :
      ready + (nodes !== null && nodes > 0 ? " of " + nodes + " (" + (Math.round(1000 * ready / nodes) / 10) + " %)" : ""));
    const forText = cap && typeof cap.spares_for === "string" && cap.spares_for !== "" ? cap.spares_for : "";
    const capFor = byId("cap-for");
    const forSecs = stepSeconds(forText);
    setText(capFor, !cap ? "unknown" : forText === "" ? "no: at most a quarter of the nodes are ready spares" :
      "more than a quarter of the nodes, for " + (forSecs === null ? forText : fmtAge(Math.floor(forSecs))));
    setClass(capFor, "warn-text", forText !== "");
  }

  // ---- zones (from v1/status) ----

  // drainProgress says where a zone's drain or return stands in the words
  // of what is left, as mcrib zones does: "1 slot to move, 0 left of a
  // baseline of 1", "1 slot moved, 0 left of a baseline of 1", "2 slots to
  // give back, 3 held of a baseline of 5".
  function drainProgress(d) {
    const held = num(d.slots), base = num(d.baseline_slots);
    let target = num(d.target_slots);
    if (held === null || base === null || target === null) return "unknown";
    if (d.returning === true) target = base;
    const slots = (k) => k + (k === 1 ? " slot" : " slots");
    if (held > target) return slots(held - target) + " to move, " + target + " left of a baseline of " + base;
    if (held < target) return slots(target - held) + " to give back, " + held + " held of a baseline of " + base;
    if (d.returning === true) return "back at its baseline of " + slots(base);
    return slots(base - held) + " moved, " + held + " left of a baseline of " + base;
  }

  // stepSeconds reads a step interval as the API writes it ("30s",
  // "1m30s", "1h"); null when it cannot.
  function stepSeconds(text) {
    const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?$/.exec(text);
    if (!m || text === "") return null;
    return (Number(m[1] || 0) * 3600) + (Number(m[2] || 0) * 60) + Number(m[3] || 0);
  }

  function drainCell(d) {
    if (!d || typeof d !== "object") return el("td", "muted", "—");
    const state = str(d.state) || "unknown";
    const td = el("td", null, el("span", "pill drain-" + state.replace(/[^a-z]/g, ""), state), " " + drainProgress(d));
    // A step waits for the step interval: say when the next one is due.
    const last = Date.parse(str(d.last_step_at)), every = stepSeconds(str(d.step_interval));
    if ((state === "draining" || state === "returning") && str(d.blocked) === "" && num(d.slots_to_move) > 0 && !isNaN(last) && every !== null) {
      const left = Math.ceil((last + every * 1000 - serverNow()) / 1000);
      if (left > 0) td.append(el("span", "muted small", " · next step in " + fmtAge(left)));
    }
    const moved = Array.isArray(d.moved_slots) ? d.moved_slots.filter((x) => num(x) !== null) : [];
    if (moved.length > 0) td.append(el("span", "muted small", " · moved off: slot" + (moved.length > 1 ? "s " : " ") + moved.join(", ")));
    if (str(d.blocked) !== "") td.append(el("span", "pill state-blocked", "blocked: " + str(d.blocked)));
    if (str(d.warning) !== "") td.append(el("div", "warn-text small", "warning: " + str(d.warning)));
    td.append(el("div", "muted small", fmtNum(d.step_percent) + " % every " + (str(d.step_interval) || "?") +
      (str(d.reason) !== "" ? " · reason: " + str(d.reason) : "")));
    return td;
  }

  function renderZones() {
    const st = last.status ? last.status.body : null;
    if (!st) return;
    const zones = Array.isArray(st.zones) ? st.zones.filter((z) => z && typeof z === "object") : [];
    const rows = zones.map((z) => {
      const name = str(z.zone);
      const unreachable = num(z.unreachable) || 0;
      return {
        sig: JSON.stringify(z),
        build: () => {
          const tr = el("tr", null,
            el("td", name ? "mono" : "muted", name || "(no zone)"),
            el("td", "num", fmtNum(z.nodes)),
            el("td", "num", fmtNum(z.slots)),
            el("td", unreachable > 0 ? "num bad-text" : "num", fmtNum(z.unreachable)),
            el("td", num(z.absent) > 0 ? "num warn-text" : "num", fmtNum(z.absent)),
            el("td", "num", fmtRate(z.hit_rate)),
            drainCell(z.drain));
          tr.setAttribute("data-zone", name);
          if (unreachable > 0) tr.classList.add("troubled");
          return tr;
        },
      };
    });
    if (rows.length === 0) rows.push(emptyRow(7, "no zones known"));
    syncRows(byId("zones"), rows);
    const drained = zones.filter((z) => z.drain && typeof z.drain === "object").length;
    setText(byId("zones-summary"), "(" + zones.length + (drained ? ", " + drained + " drained" : "") + ")");
  }

  function renderSlots() {
    const tbody = byId("slots");
    const sm = last.slotmap ? last.slotmap.body : null;
    if (!sm || !Array.isArray(sm.slots)) {
      if (!last.slotmap) syncRows(tbody, [emptyRow(8, "no slot map yet")]);
      return;
    }
    const nodes = nodesById();
    let vacant = 0, twins = 0;
    const rows = sm.slots.map((entry, i) => {
      const s = entry && typeof entry === "object" ? entry : {};
      const slot = num(s.slot) === null ? i : s.slot;
      const id = str(s.node_id);
      const n = id ? nodes.get(id) : null;
      const warm = s.warming && typeof s.warming === "object" ? s.warming : null;
      const incoming = s.incoming && typeof s.incoming === "object" ? s.incoming : null;
      // A twin (slot s + N of a resize from N) names slot s's node until
      // it splits; slot s's row names its twin.
      const twinOf = num(s.twin_of);
      const twin = twinOf === null && n && num(n.slot) === slot ? num(n.twin) : null;
      if (!id) vacant++;
      if (twinOf !== null) twins++;
      return {
        sig: [slot, id, str(s.addr), str(s.az), nodeSig(n), Boolean(n), warm ? str(warm.node_id) + str(warm.until) + str(warm.ended_at) : "",
          incoming ? str(incoming.node_id) + str(incoming.serves_at) : "", twinOf, twin].join("|"),
        build: () => {
          if (!id) {
            const note = el("td", "vacant-note", incoming ? "no node: keys of this slot miss until " + (str(incoming.node_id) || "?") + ", announced, serves it"
              : "no node: keys of this slot miss until a node is placed");
            note.colSpan = 6;
            const tr = el("tr", "vacant",
              el("td", "num", String(slot)),
              el("td", "vacant-label", "VACANT"),
              note);
            tr.setAttribute("data-slot", String(slot));
            return tr;
          }
          const tr = el("tr", twinOf !== null ? "twin" : null,
            slotCell(slot, twinOf, twin),
            nodeCell(id, warm, incoming),
            el("td", "mono", str(s.addr)),
            el("td", null, str(s.az) || "—"),
            stateCell(n),
            reachableCell(n),
            consulCell(n),
            flapsCell(n));
          tr.setAttribute("data-slot", String(slot));
          if (n && n.reachable !== true) tr.classList.add("troubled");
          return tr;
        },
      };
    });
    if (rows.length === 0) rows.push(emptyRow(8, "the slot map has no slots"));
    syncRows(tbody, rows);
    const total = sm.slots.length;
    setText(byId("slots-summary"), total + " slots, " + vacant + " vacant, " +
      (twins > 0 ? twins + (twins === 1 ? " twin" : " twins") + " not split, " : "") + "generation " + fmtNum(sm.generation));
    setClass(byId("slots-summary"), "bad-text", vacant > 0);
  }

  function renderSpares() {
    const sm = last.slotmap ? last.slotmap.body : null;
    const st = last.status ? last.status.body : null;
    if (!sm && !st) return;
    const nodes = nodesById();
    const spares = [];
    const seen = new Set();
    if (sm && Array.isArray(sm.spares)) {
      for (const s of sm.spares) {
        const id = str(s && s.node_id);
        if (!id || seen.has(id)) continue;
        seen.add(id);
        spares.push({ id: id, addr: str(s.addr), az: str(s.az), n: nodes.get(id) });
      }
    }
    const down = [];
    for (const [id, n] of nodes) {
      if (str(n.state) === "down") {
        down.push(n);
        continue;
      }
      // A warm source is no spare (docs/api.md, "Warm moves"), nor an
      // incoming node ("Announce, then serve"): its slot row names it.
      if (str(n.state) === "warming" || str(n.state) === "incoming") continue;
      // A node without a slot that is not down and not yet a spare in the
      // slot map (e.g. being flushed) is listed with the spares.
      if ((n.slot === null || n.slot === undefined) && !seen.has(id)) {
        seen.add(id);
        spares.push({ id: id, addr: str(n.addr), az: str(n.az), n: n });
      }
    }

    const spareRows = spares.map((s) => ({
      sig: [s.id, s.addr, s.az, nodeSig(s.n), Boolean(s.n)].join("|"),
      build: () => {
        const tr = el("tr", null,
          el("td", "mono", s.id),
          el("td", "mono", s.addr),
          el("td", null, s.az || "—"),
          stateCell(s.n),
          reachableCell(s.n),
          consulCell(s.n),
          flapsCell(s.n));
        tr.setAttribute("data-node", s.id);
        return tr;
      },
    }));
    if (spareRows.length === 0) spareRows.push(emptyRow(7, "no spares: a lost node leaves its slot vacant"));
    syncRows(byId("spares"), spareRows);
    setText(byId("spares-summary"), "(" + spares.length + ")");
    setClass(byId("spares-summary"), "bad-text", spares.length === 0);
    const count = byId("spare-count");
    setText(count, String(spares.length));
    setClass(count, "bad", spares.length === 0);
    setClass(count, "good", spares.length > 0);

    // Warm sources: nodes that gave their slot away in a planned move and
    // still serve as its new holder's warm source (also in a drained zone).
    const warmSlots = new Map();
    if (sm && Array.isArray(sm.slots)) {
      sm.slots.forEach((entry, i) => {
        const w = entry && typeof entry === "object" && entry.warming && typeof entry.warming === "object" ? entry.warming : null;
        if (w) warmSlots.set(str(w.node_id), { slot: num(entry.slot) === null ? i : entry.slot, until: str(w.until), to: str(entry.node_id) });
      });
    }
    const sources = [];
    for (const [id, n] of nodes) {
      if (str(n.state) === "warming" || num(n.warming) !== null) sources.push({ id: id, n: n, w: warmSlots.get(id) || null });
    }
    const sourceRows = sources.map((s) => ({
      sig: [s.id, nodeSig(s.n), s.w ? s.w.slot + s.w.until + s.w.to : ""].join("|"),
      build: () => {
        const slot = s.w ? s.w.slot : num(s.n.warming);
        const until = s.w ? Date.parse(s.w.until) : NaN;
        const warms = "slot " + (slot === null ? "?" : slot) + (s.w && s.w.to ? " for " + s.w.to : "") +
          (isNaN(until) ? "" : " until " + fmtUTC(until));
        const tr = el("tr", null,
          el("td", "mono", s.id),
          el("td", "mono", str(s.n.addr)),
          el("td", null, str(s.n.az) || "—"),
          el("td", null, warms),
          stateCell(s.n),
          reachableCell(s.n),
          consulCell(s.n));
        tr.setAttribute("data-node", s.id);
        return tr;
      },
    }));
    if (!st) {
      sourceRows.push(emptyRow(7, "unknown: v1/status has not answered yet"));
    } else if (sourceRows.length === 0) {
      sourceRows.push(emptyRow(7, "none: no slot warms"));
    }
    syncRows(byId("warmsources"), sourceRows);
    setText(byId("warmsources-summary"), st ? "(" + sources.length + ")" : "");

    const downRows = down.map((n) => ({
      sig: [n.id, n.addr, n.az, nodeSig(n)].join("|"),
      build: () => {
        const absent = ageOf(n.absent_since);
        const tr = el("tr", "troubled",
          el("td", "mono", str(n.id)),
          el("td", "mono", str(n.addr)),
          el("td", null, str(n.az) || "—"),
          consulCell(n),
          el("td", null, absent === null ? "—" : fmtAge(absent)),
          flapsCell(n));
        tr.setAttribute("data-node", str(n.id));
        return tr;
      },
    }));
    if (!st) {
      downRows.push(emptyRow(6, "unknown: v1/status has not answered yet"));
    } else if (downRows.length === 0) {
      downRows.push(emptyRow(6, "none"));
    }
    syncRows(byId("down"), downRows);
    setText(byId("down-summary"), st ? "(" + down.length + ")" : "");
    setClass(byId("down-summary"), "bad-text", down.length > 0);
  }

  // ---- boot limit (from v1/ratelimit) ----

  function renderBootLimit() {
    const bl = last.ratelimit ? last.ratelimit.body : null;
    if (!bl) return;
    const manual = str(bl.mode) === "manual";
    const mode = byId("bl-mode");
    setText(mode, manual ? "MANUAL" : str(bl.mode) || "—");
    setClass(mode, "warn", manual);
    setText(byId("bl-mode-note"), manual ? "pinned by an operator" : str(bl.mode) === "auto" ? "follows the hit rate" : "");
    setText(byId("bl-limit"), fmtNum(bl.limit) + " boots/s");
    const meter = byId("bl-meter");
    const ceiling = num(bl.ceiling);
    const limit = num(bl.limit);
    meter.max = ceiling !== null && ceiling > 0 ? ceiling : Math.max(limit || 0, 1);
    meter.value = limit || 0;
    setText(byId("bl-burst"), fmtNum(bl.burst));
    // The status document says when no hit rate is known yet (null); the
    // boot-limit document's 0 would read as a cold cache.
    const st = last.status ? last.status.body : null;
    setText(byId("bl-hitrate"), fmtRate(st && "hit_rate" in st ? st.hit_rate : bl.hit_rate));
    setText(byId("bl-range"), fmtNum(bl.floor) + " – " + fmtNum(bl.ceiling) + " boots/s");
    setText(byId("bl-reason"), str(bl.reason) || "—");
    const showAuto = manual && (num(bl.auto_limit) !== null || str(bl.auto_reason) !== "");
    setShown(byId("bl-auto-row"), showAuto);
    setText(byId("bl-auto-limit"), num(bl.auto_limit) === null ? "" : fmtNum(bl.auto_limit) + " boots/s");
    setText(byId("bl-auto-reason"), str(bl.auto_reason));
    setText(byId("bl-updated"), bl.updated_at ? fmtWhen(bl.updated_at) : "—");
  }

  // ---- errors and staleness ----

  // renderErrors shows failed fetches (and any answer the page could not
  // show) in #error and greys out the panels whose data is stale.
  function renderErrors(failures, broken) {
    const err = byId("error");
    if (failures.length === 0 && broken.length === 0) {
      setShown(err, false);
      setText(err, "");
    } else {
      let text = failures.length ? "cannot reach mcrib: " + failures.join("; ") + "." : "";
      if (failures.length) {
        const stale = Object.keys(last).filter((k) => last[k] && !fresh[k]).map((k) => last[k].at);
        if (stale.length) {
          const s = Math.max(0, Math.round((Date.now() - Math.min(...stale)) / 1000));
          text += " Greyed-out parts show the last good answer, " + fmtAge(s) + " old.";
        } else if (!Object.values(last).some(Boolean)) {
          text += " No data has been received yet.";
        }
      }
      if (broken.length) text += (text ? " " : "") + "Dashboard error: " + broken.join("; ") + ".";
      setText(err, text);
      setShown(err, true);
    }
    setClass(byId("band"), "stale", !fresh.status && last.status);
    setClass(byId("banners"), "stale", !fresh.status && last.status);
    setClass(byId("slots-panel"), "stale", (!fresh.slotmap && last.slotmap) || (!fresh.status && last.status));
    setClass(byId("spares-panel"), "stale", (!fresh.slotmap && last.slotmap) || (!fresh.status && last.status));
    setClass(byId("down-panel"), "stale", !fresh.status && last.status);
    setClass(byId("warmsources-panel"), "stale", (!fresh.slotmap && last.slotmap) || (!fresh.status && last.status));
    setClass(byId("zones-panel"), "stale", !fresh.status && last.status);
    setClass(byId("resize-panel"), "stale", !fresh.status && last.status);
    setClass(byId("roll-panel"), "stale", !fresh.status && last.status);
    setClass(byId("capacity-panel"), "stale", !fresh.status && last.status);
    setClass(byId("bootlimit-panel"), "stale", !fresh.ratelimit && last.ratelimit);
    setClass(document.body, "failing", failures.length > 0);
    document.body.classList.remove("loading");
    if (failures.length > 0 && !document.title.startsWith("UNREACHABLE")) {
      document.title = "UNREACHABLE · " + document.title;
    }
    const now = new Date();
    const hms = pad(now.getHours()) + ":" + pad(now.getMinutes()) + ":" + pad(now.getSeconds());
    setText(byId("updated"), (failures.length === 0 ? "updated " : "last poll FAILED at ") + hms + " browser time");
  }

  async function poll() {
    const names = Object.keys(SOURCES);
    const results = await Promise.allSettled(names.map((n) => fetchJSON(SOURCES[n])));
    const failures = [];
    const broken = [];
    results.forEach((r, i) => {
      const name = names[i];
      if (r.status === "fulfilled") {
        last[name] = r.value;
        fresh[name] = true;
      } else {
        fresh[name] = false;
        failures.push((r.reason && r.reason.message) || String(r.reason));
      }
    });
    for (const step of [renderStatus, renderZones, renderSlots, renderSpares, renderResize, renderRoll, renderBootLimit]) {
      try {
        step();
      } catch (e) {
        broken.push(step.name + ": " + ((e && e.message) || String(e)));
      }
    }
    renderErrors(failures, broken);
    setTimeout(poll, POLL_MS);
  }

  poll();
})();
