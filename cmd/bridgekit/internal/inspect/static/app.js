// bridgekit inspector: polls the server's /api for sessions and records
// and renders them. No framework, no external fetch.
"use strict";
const $ = (s) => document.querySelector(s);
const el = (tag, attrs, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else if (k === "text") e.textContent = v; else e.setAttribute(k, v);
  }
  for (const k of kids) if (k != null) e.append(k);
  return e;
};

const state = { sessions: [], current: null, records: new Map(), lastSeq: new Map(), selected: null, view: "timeline" };

async function getJSON(url) {
  const r = await fetch(url, { cache: "no-store" });
  if (!r.ok) throw new Error(url + ": " + r.status);
  return r.json();
}

// One load per session at a time: two would fetch the same page twice.
const loading = new Map();
function loadRecords(id) {
  if (!loading.has(id)) loading.set(id, fetchRecords(id).finally(() => loading.delete(id)));
  return loading.get(id);
}

async function fetchRecords(id) {
  let recs = state.records.get(id) || [];
  for (;;) {
    const after = state.lastSeq.get(id) || 0;
    const page = await getJSON(`api/records?session=${encodeURIComponent(id)}&after=${after}`);
    if (!page.length) break;
    recs = recs.concat(page);
    state.lastSeq.set(id, page[page.length - 1].seq);
    if (page.length < 2000) break;
  }
  state.records.set(id, recs);
  return recs;
}

async function poll() {
  try {
    state.sessions = await getJSON("api/sessions");
    if (!state.current && state.sessions.length) { state.current = state.sessions[0].id; updateExport(); }
    renderSessions();
    if (state.current) {
      const before = (state.records.get(state.current) || []).length;
      const recs = await loadRecords(state.current);
      if (recs.length !== before) renderCurrent();
    }
    $("#status").textContent = "live · " + new Date().toLocaleTimeString();
  } catch (e) {
    $("#status").textContent = "disconnected: " + e.message;
  }
}

// renderedSessions is what the session list was last built from: the
// list is rebuilt only when it changes, so that a row being clicked is not
// replaced under the pointer by the next poll.
let renderedSessions = "";
function renderSessions() {
  const ul = $("#sessions"), sel = $("#session"), a = $("#diff-a"), b = $("#diff-b");
  const key = JSON.stringify([state.current, state.sessions]);
  if (key === renderedSessions) return;
  renderedSessions = key;
  ul.replaceChildren();
  const opts = [sel, a, b].map((s) => [s, s.value]);
  for (const [s] of opts) s.replaceChildren();
  for (const s of state.sessions) {
    const status = s.unclean ? "ended (unclean)" : s.ended ? (s.status != null ? "exit " + s.status : "ended") : "live";
    const li = el("li", { "data-session": s.id, class: s.id === state.current ? "on" : "" },
      el("div", { class: "sid", text: s.id }),
      el("div", {}, el("span", { class: "badge", text: s.family || "?" }), el("span", { class: "dim", text: `${s.frames} frames · ${status}` }),
        s.problems ? el("span", { class: "bad", text: ` · ${s.problems} problems` }) : null),
      el("div", { class: "dim mono", text: (s.command || []).join(" ") }));
    li.onclick = () => selectSession(s.id);
    ul.append(li);
    for (const [sl] of opts) sl.append(el("option", { value: s.id, text: s.id }));
  }
  for (const [s, v] of opts) if (v) s.value = v;
  sel.value = state.current || "";
  if (!b.value || b.value === a.value) { if (state.sessions[1]) b.value = state.sessions[1].id; }
}

function selectSession(id) {
  state.current = id;
  updateExport();
  state.selected = null;
  renderSessions();
  renderCurrent();
  loadRecords(id).then(renderCurrent);
}

const frameRecords = () => (state.records.get(state.current) || []).filter((r) => r.type === "frame");
// The timeline's records: the frames and, between them in the order they
// came, the lines the command wrote on its stderr.
const timelineRecords = () => (state.records.get(state.current) || []).filter((r) => r.type === "frame" || r.type === "stderr");

// updateTypeOf returns an ACP session/update's sessionUpdate, or "".
function updateTypeOf(r) {
  if (r.method !== "session/update") return "";
  const d = parseRaw(r);
  return (d && d.params && d.params.update && d.params.update.sessionUpdate) || "";
}

const filterIDs = ["#filter-text", "#filter-method", "#filter-dir", "#filter-kind", "#filter-update", "#filter-errors"];
const filterKey = () => filterIDs.map((id) => { const e = $(id); return e.type === "checkbox" ? e.checked : e.value; }).join("\u0000");

function visible(r) {
  if (r.type === "stderr") {
    const q = $("#filter-text").value.trim().toLowerCase();
    if (q && !(r.raw || "").toLowerCase().includes(q)) return false;
    const d = $("#filter-dir").value, k = $("#filter-kind").value;
    return !$("#filter-method").value.trim() && (!d || d === "stderr") && (!k || k === "stderr") && !$("#filter-update").value && !$("#filter-errors").checked;
  }
  if ($("#filter-dir").value === "stderr" || $("#filter-kind").value === "stderr") return false;
  const m = $("#filter-method").value.trim();
  if (m && !(r.method || "").includes(m)) return false;
  // Full text: the frame as recorded, case-insensitive.
  const q = $("#filter-text").value.trim().toLowerCase();
  if (q && !(r.raw || "").toLowerCase().includes(q)) return false;
  if ($("#filter-dir").value && r.dir !== $("#filter-dir").value) return false;
  const k = $("#filter-kind").value;
  if (k && r.kind !== k && !(k === "error" && errorOf(r))) return false;
  if ($("#filter-update").value && updateTypeOf(r) !== $("#filter-update").value) return false;
  if ($("#filter-errors").checked && !(r.problems && r.problems.length)) return false;
  return true;
}

function fmtLatency(us) {
  if (us == null) return "";
  if (us >= 1e6) return (us / 1e6).toFixed(2) + " s";
  if (us >= 1e3) return (us / 1e3).toFixed(1) + " ms";
  return us.toFixed(0) + " µs";
}
// fmtTime shows a record's time of day, UTC, to the millisecond.
function fmtTime(t) {
  const d = new Date(t);
  return isNaN(d) ? "" : d.toISOString().slice(11, 23);
}
// elide keeps the start and end of a long id (UUIDs): whole in the title
// and the detail pane.
function elide(s, max = 14) {
  return s.length <= max ? s : s.slice(0, 8) + "…" + s.slice(-4);
}
function fmtSize(n) { return n >= 1048576 ? (n / 1048576).toFixed(1) + " MiB" : n >= 1024 ? (n / 1024).toFixed(1) + " KiB" : n + " B"; }
function startOf() {
  const recs = state.records.get(state.current) || [];
  return recs.length ? Date.parse(recs[0].time) : 0;
}

// The timeline grows by appending rows; it is rebuilt only when the
// session or a filter changes.
const rendered = { key: null, count: 0 };

function renderCurrent() {
  const tbody = $("#timeline tbody");
  const key = state.current + "\u0000" + filterKey();
  const all = timelineRecords();
  // The update types the session has, for the filter.
  const ut = $("#filter-update"), known = new Set([...ut.options].map((o) => o.value));
  for (const r of all.slice(rendered.count)) {
    const u = updateTypeOf(r);
    if (u && !known.has(u)) { ut.append(el("option", { value: u, text: u })); known.add(u); }
  }
  if (rendered.key !== key) { tbody.replaceChildren(); rendered.key = key; rendered.count = 0; tbody.dataset.session = state.current || ""; }
  const t0 = startOf();
  for (const r of all.slice(rendered.count)) {
    if (!visible(r)) continue;
    if (r.type === "stderr") {
      const text = r.raw != null ? r.raw : "(base64) " + r.raw_base64;
      const tr = el("tr", { "data-seq": r.seq, class: "stderr" + (state.selected === r.seq ? " on" : "") },
        el("td", { text: r.seq }),
        el("td", { class: "mono time", title: `${r.time} · +${((Date.parse(r.time) - t0) / 1000).toFixed(3)}s`, text: fmtTime(r.time) }),
        el("td", { class: "dir-stderr", text: "stderr" }),
        el("td", { class: "mono stderr-text", colspan: 6, title: text, text: text + (r.partial ? " (no newline at the end)" : "") + (r.truncated ? " (cut)" : "") }));
      tr.onclick = () => selectFrame(r.seq);
      tbody.append(tr);
      continue;
    }
    const n = (r.problems || []).length;
    const tr = el("tr", { "data-seq": r.seq, class: (n ? "problem " : "") + (state.selected === r.seq ? "on" : "") },
      el("td", { text: r.seq }),
      el("td", { class: "mono time", title: `${r.time} · +${((Date.parse(r.time) - t0) / 1000).toFixed(3)}s`, text: fmtTime(r.time) }),
      el("td", { class: "dir-" + r.dir, text: r.dir === "in" ? "→ in" : "← out" }),
      el("td", { class: errorOf(r) ? "err" : "", title: errorOf(r) ? `${errorOf(r).code} ${errorOf(r).message || ""}` : "",
        text: r.kind + (errorOf(r) ? ` ${errorOf(r).code} ${errorOf(r).message || ""}` : "") }),
      el("td", { class: "mono", text: (r.method || "") + (r.qualifier ? ` [${r.qualifier}]` : "") }),
      el("td", { class: "mono id", title: r.id != null ? JSON.stringify(r.id) : "", text: r.id != null ? elide(JSON.stringify(r.id)) : "" }),
      el("td", { text: fmtSize(r.size || 0) + (r.truncated ? " (cut)" : "") }),
      el("td", { text: fmtLatency(r.latency_us) }),
      el("td", { text: n ? n + " ✗" : "" }));
    tr.onclick = () => selectFrame(r.seq);
    tbody.append(tr);
  }
  rendered.count = all.length;
  const end = (state.records.get(state.current) || []).find((r) => r.type === "end");
  $("#end").textContent = end ? (end.unclean ? "session ended (unclean): its recorder died" : `session ended: exit status ${end.status}${end.signal ? " (" + end.signal + ")" : ""}`) +
    ((end.unanswered || []).length ? ` · never answered: ${end.unanswered.map((u) => `${u.method} ${u.id}`).join(", ")}` : "") : "session live";
  if (state.view === "waterfall") renderWaterfall();
  if (state.view === "conversation") renderConversation();
  if (state.view === "context") renderContext();
}

const parsed = new WeakMap();
function parseRaw(r) {
  if (r.raw == null) return undefined;
  if (parsed.has(r)) return structuredClone(parsed.get(r));
  let d;
  try { d = JSON.parse(r.raw); } catch { d = undefined; }
  parsed.set(r, d);
  return structuredClone(d);
}

// errorOf returns a reply's error object ({code, message}), or null.
function errorOf(r) {
  if (r.kind !== "response" && r.kind !== "error" && !r.reply_to) return null;
  const d = parseRaw(r);
  if (!d || typeof d !== "object") return null;
  const e = d.error || (d.kind === "error" ? d.payload : null);
  return e && typeof e === "object" ? e : null;
}

// The request a reply answers, and the reply of a request, both ways.
function pairOf(r) {
  const frs = frameRecords();
  if (r.reply_to) return frs.find((x) => x.seq === r.reply_to) || null;
  if (r.kind === "request") return frs.find((x) => x.reply_to === r.seq) || null;
  return null;
}

// renderPair shows a request and its reply side by side, each a link to
// the other; an error reply with its code and message, in red.
function renderPair(r) {
  const box = $("#pair");
  box.replaceChildren();
  box.classList.remove("diffpair");
  if (r.kind !== "request" && !r.reply_to) return;
  const other = pairOf(r);
  const [q, a] = r.reply_to ? [other, r] : [r, other];
  const side = (x, label) => {
    const d = el("div", { class: "side" + (x === r ? " on" : ""), "data-side": label });
    if (!x) { d.append(el("h2", { text: label + ": never answered" })); return d; }
    const link = el("a", { "data-seq": x.seq, text: `#${x.seq}` });
    link.onclick = () => selectFrame(x.seq);
    d.append(el("h2", {}, label + " ", link, x.latency_us != null ? ` · ${fmtLatency(x.latency_us)}` : ""));
    const e = errorOf(x);
    if (e) d.append(el("div", { class: "errline", text: `error ${e.code}: ${e.message || ""}` }));
    d.append(el("pre", { text: x.raw != null ? x.raw : "(base64) " + x.raw_base64 }));
    return d;
  };
  box.append(side(q, "request"), side(a, "reply"));
}

function selectFrame(seq) {
  state.selected = seq;
  for (const tr of document.querySelectorAll("#timeline tbody tr")) tr.classList.toggle("on", +tr.dataset.seq === seq);
  const r = timelineRecords().find((x) => x.seq === seq);
  if (!r) return;
  if (r.type === "stderr") {
    $("#detail-title").textContent = `#${r.seq} stderr`;
    $("#detail-title").title = r.time;
    $("#copy-frame").disabled = false;
    $("#copied").textContent = "";
    $("#tab-tree").replaceChildren(el("pre", { class: "stderr-line", text: r.raw != null ? r.raw : "(base64) " + r.raw_base64 }));
    $("#tab-raw").textContent = r.raw != null ? r.raw : "(base64) " + r.raw_base64;
    $("#tab-schema-body").replaceChildren(el("p", { class: "dim", text: "a line of the command's stderr" + (r.redacted ? ", secrets masked" : "") }));
    $("#rendered").replaceChildren();
    $("#pair").replaceChildren();
    return;
  }
  $("#detail-title").textContent = `#${r.seq} ${r.dir === "in" ? "→" : "←"} ${r.kind} ${r.method || ""}`;
  $("#detail-title").title = r.time;
  $("#copy-frame").disabled = false;
  $("#copied").textContent = "";
  const doc = parseRaw(r);
  const bad = new Map((r.problems || []).filter((p) => p.pointer).map((p) => [p.pointer, p]));
  $("#tab-tree").replaceChildren(doc === undefined ? el("p", { class: "dim", text: r.truncated ? "recorded truncated: see Raw" : "not JSON: see Raw" }) : tree(doc, "", bad));
  $("#tab-raw").textContent = r.raw != null ? r.raw : "(base64) " + r.raw_base64;
  renderSchema(r, doc);
  renderRendered(r, doc);
  renderPair(r);
  for (const e of document.querySelectorAll("#conversation [data-seq]")) e.classList.toggle("on", +e.dataset.seq === seq);
}

function tree(v, ptr, bad, key, cls0) {
  const markCls = cls0 || "violation";
  const note = (p) => (markCls === "differs" ? "≠ " : "✗ " + p.code + ": ") + p.message;
  const mark = (e) => {
    const p = bad.get(ptr);
    if (p) { e.classList.add(markCls); e.setAttribute("data-pointer", ptr); e.append(el("span", { class: "violation-note", text: note(p) })); }
    return e;
  };
  const label = key != null ? [el("span", { class: "k", text: JSON.stringify(key) }), ": "] : [];
  if (v !== null && typeof v === "object") {
    const isArr = Array.isArray(v);
    const entries = isArr ? v.map((x, i) => [i, x]) : Object.entries(v);
    const d = el("details", { open: "" }, mark(el("summary", {}, ...label, isArr ? `[${entries.length}]` : `{${entries.length}}`)));
    for (const [k, x] of entries) d.append(tree(x, ptr + "/" + String(k).replace(/~/g, "~0").replace(/\//g, "~1"), bad, k, cls0));
    // a missing member: its pointer names a child that is not there
    for (const [p, pr] of bad) {
      if (p.startsWith(ptr + "/") && !p.slice(ptr.length + 1).includes("/") && !(decodeSeg(p.slice(ptr.length + 1)) in v)) {
        d.append(el("div", { class: "leaf " + markCls, "data-pointer": p }, el("span", { class: "k", text: JSON.stringify(decodeSeg(p.slice(ptr.length + 1))) }), ": (missing)",
          el("span", { class: "violation-note", text: note(pr) })));
      }
    }
    return ptr === "" ? el("div", { class: "tree" }, d) : d;
  }
  const cls = typeof v === "string" ? "s" : typeof v === "number" ? "n" : "l";
  const leaf = mark(el("div", { class: "leaf" }, ...label, el("span", { class: cls, text: JSON.stringify(v) })));
  return ptr === "" ? el("div", { class: "tree" }, leaf) : leaf;
}
const decodeSeg = (s) => s.replace(/~1/g, "/").replace(/~0/g, "~");

function renderSchema(r, doc) {
  const box = $("#tab-schema-body");
  box.replaceChildren();
  const ps = r.problems || [];
  if (!ps.length) { box.append(el("p", { class: "ok", text: `✓ ${r.method || "frame"}: fits its ${r.family || ""} schema (checked by the generated type)` })); return; }
  for (const p of ps) {
    box.append(el("div", { class: "problem-item", "data-code": p.code },
      el("strong", { text: p.code }), p.pointer ? el("span", {}, " at ", el("code", { class: "pointer", text: p.pointer })) : null,
      el("div", { text: p.message })));
  }
  if (doc !== undefined) {
    box.append(el("h2", { text: "where" }));
    box.append(tree(doc, "", new Map(ps.filter((p) => p.pointer).map((p) => [p.pointer, p]))));
  }
}

// Harn's _meta.harn variants and AgentPM's events, by kind.
function renderRendered(r, doc) {
  const box = $("#rendered");
  box.replaceChildren();
  if (!doc || typeof doc !== "object") return;
  const dl = (obj) => {
    const d = el("dl");
    for (const [k, v] of Object.entries(obj || {})) d.append(el("dt", { text: k }), el("dd", { text: typeof v === "string" ? v : JSON.stringify(v) }));
    return d;
  };
  const card = (title, badges, body) => box.append(el("div", { class: "card", "data-render": title }, ...badges, el("strong", { text: title }), body));
  const p = doc.params || doc.payload || {};
  if (r.method === "session/update" && p.update) {
    const u = p.update, kind = u.sessionUpdate;
    const harn = (u._meta && u._meta.harn) || (p._meta && p._meta.harn);
    const badges = [el("span", { class: "badge", text: "session/update" })];
    if (harn) badges.push(el("span", { class: "badge harn", text: "Harn" }));
    let body = el("div");
    if (u.content && u.content.type === "text") body.append(el("p", { class: "mono", text: u.content.text }));
    if (u.title || u.status) body.append(el("p", { text: [u.title, u.status].filter(Boolean).join(" · ") }));
    if (u.entries) body.append(el("p", { text: `${u.entries.length} plan entries` }));
    if (harn) { body.append(el("h2", { text: "_meta.harn" })); body.append(dl(harn)); }
    card(kind || "update", badges, body);
    return;
  }
  if (r.method === "harness_event" || (r.family || "").startsWith("agentpm") && r.kind === "notification") {
    const ev = p, pl = ev.payload || {};
    const badges = [el("span", { class: "badge", text: "AgentPM event" })];
    if (pl.payload_type) badges.push(el("span", { class: "badge harn", text: pl.payload_type }));
    const shown = Object.fromEntries(Object.entries(pl).filter(([k]) => k !== "payload_type"));
    const meta = { session: ev.session_id, run: ev.run_id, sequence: ev.session_sequence, at: ev.timestamp };
    card(ev.event_type || r.method, badges, el("div", {}, dl(Object.fromEntries(Object.entries(meta).filter(([, v]) => v != null))), dl(shown)));
    return;
  }
  if (doc.params && doc.params._meta && doc.params._meta.harn) {
    card(r.method, [el("span", { class: "badge harn", text: "Harn" })], dl(doc.params._meta.harn));
  }
}

// conversation assembles the frames into what was said, per ACP session
// (params.sessionId; a reply goes with its request): user prompts, agent
// message and thought text with their chunks joined, plans, one card per
// tool call (its updates, its permission request with the options and the
// answer chosen, the fs/terminal requests made while it ran), replies that
// are errors, Harn's _meta.harn variants and AgentPM events by kind.
function conversation(frs) {
  const replyOf = new Map(frs.filter((r) => r.reply_to).map((r) => [r.reply_to, r]));
  const sessionOf = new Map();
  const convs = new Map();
  const conv = (sid) => {
    if (!convs.has(sid)) convs.set(sid, { id: sid, items: [], tools: new Map(), running: [] });
    return convs.get(sid);
  };
  const text = (c) => (c && typeof c === "object" ? (c.type === "text" ? c.text : c.type === "resource_link" ? c.uri : `[${c.type}]`) : "");
  for (const r of frs) {
    const d = parseRaw(r);
    if (!d || typeof d !== "object") continue;
    const p = (d.params && typeof d.params === "object" ? d.params : null) || (d.payload && typeof d.payload === "object" ? d.payload : {});
    let sid = p.sessionId || p.session_id || (r.reply_to && sessionOf.get(r.reply_to)) || "(no session)";
    if (r.kind === "request") sessionOf.set(r.seq, sid);
    if (r.reply_to && !sessionOf.has(r.reply_to)) continue; // replies of requests outside a session (initialize)
    const c = conv(sid);
    const push = (item) => { c.items.push(item); return item; };
    const last = c.items[c.items.length - 1];
    if (r.method === "session/prompt" && r.kind === "request") {
      push({ type: "user", seq: r.seq, text: (p.prompt || []).map(text).join("") });
      continue;
    }
    if (r.method === "session/update" && p.update) {
      const u = p.update, kind = u.sessionUpdate;
      const harn = (u._meta && u._meta.harn) || (p._meta && p._meta.harn);
      if (kind === "agent_message_chunk" || kind === "agent_thought_chunk" || kind === "user_message_chunk") {
        const type = kind === "agent_message_chunk" ? "agent" : kind === "agent_thought_chunk" ? "thought" : "user";
        const t = text(u.content);
        // Consecutive chunks of one kind are one message.
        if (last && last.type === type) { last.text += t; last.seqs.push(r.seq); }
        else if (t) push({ type, seq: r.seq, seqs: [r.seq], text: t });
      } else if (kind === "plan") {
        push({ type: "plan", seq: r.seq, entries: u.entries || [] });
      } else if (kind === "tool_call" || kind === "tool_call_update") {
        let card = c.tools.get(u.toolCallId);
        if (!card) {
          card = push(newCard(r, u.toolCallId, "", ""));
          c.tools.set(u.toolCallId, card);
          c.running.push(card);
        }
        card.updates.push(r.seq);
        evidence(card, u);
        if (u.title) card.title = u.title;
        if (u.kind) card.kind = u.kind;
        if (u.status) card.status = u.status;
        if (u.status === "completed" || u.status === "failed") {
          card.end = Date.parse(r.time);
          card.endSeq = r.seq;
          c.running = c.running.filter((x) => x !== card);
        }
      } else if (kind === "user_message") {
        push({ type: "user", seq: r.seq, text: (Array.isArray(u.content) ? u.content : [u.content]).map(text).join("") });
      } else if (harn || harnKinds[kind]) {
        push({ type: "harn", seq: r.seq, kind, data: harn || {} });
      } else {
        push({ type: "note", seq: r.seq, text: kind });
      }
      continue;
    }
    if (r.method === "session/request_permission" && r.kind === "request") {
      const tc = p.toolCall || {};
      let card = c.tools.get(tc.toolCallId);
      if (!card) {
        card = push(newCard(r, tc.toolCallId || "?", tc.title || "", tc.kind || ""));
        c.tools.set(tc.toolCallId, card);
      }
      evidence(card, tc);
      const a = replyOf.get(r.seq), ad = a ? parseRaw(a) : null;
      const outcome = ad && ad.result && ad.result.outcome;
      const chosen = outcome && outcome.optionId ? (p.options || []).find((o) => o.optionId === outcome.optionId) : null;
      card.permission = { seq: r.seq, reply: a ? a.seq : null, options: p.options || [], outcome: outcome ? outcome.outcome : (a ? "error" : "unanswered"), chosen };
      continue;
    }
    if (r.kind === "request" && /^(fs|terminal)\//.test(r.method || "")) {
      const a = replyOf.get(r.seq), ad = a ? parseRaw(a) : null;
      const created = r.method === "terminal/create" && ad && ad.result && ad.result.terminalId;
      push({ type: "request", seq: r.seq, reply: a ? a.seq : null, method: r.method, what: p.path || p.command || p.terminalId || "", error: a ? errorOf(a) : null,
        path: p.path || "", terminalId: p.terminalId || created || "", metaId: metaToolCallId(p._meta) });
      continue;
    }
    if (r.reply_to) {
      const e = errorOf(r);
      if (e) push({ type: "error", seq: r.seq, request: r.reply_to, method: (frs.find((x) => x.seq === r.reply_to) || {}).method, code: e.code, message: e.message });
      else if (d.result && d.result.stopReason) push({ type: "stop", seq: r.seq, text: "stop reason: " + d.result.stopReason });
      continue;
    }
    if (r.method === "harness_event" || (r.family || "").startsWith("agentpm") && r.kind === "notification") {
      c.agentpm = true;
      push({ type: "agentpm", seq: r.seq, kind: p.event_type || r.method, data: p.payload || {}, event: p });
      continue;
    }
    if (r.method === "_harn/agentEvent" && p.kind) {
      push({ type: "harn", seq: r.seq, kind: p.kind, data: p });
      continue;
    }
    if (r.method === "agent/idle") {
      push({ type: "harn", seq: r.seq, kind: "agent/idle", data: p });
      continue;
    }
    if (p._meta && p._meta.harn) push({ type: "harn", seq: r.seq, kind: r.method, data: p._meta.harn });
  }
  for (const c of convs.values()) attribute(c);
  return [...convs.values()].filter((c) => c.items.length);
}

function newCard(r, id, title, kind) {
  return { type: "tool", seq: r.seq, id, title, kind, status: "pending", start: Date.parse(r.time), endSeq: null, updates: [], permission: null, requests: [], paths: new Set(), terminals: new Set() };
}

// evidence keeps what a tool call says of the files and terminals it
// works on: its locations, the paths of its raw input, the terminals its
// content embeds.
function evidence(card, u) {
  for (const l of u.locations || []) if (l && l.path) card.paths.add(l.path);
  const ri = u.rawInput && typeof u.rawInput === "object" ? u.rawInput : {};
  for (const k of ["path", "file_path", "filePath", "absolute_path", "notebook_path"]) if (typeof ri[k] === "string") card.paths.add(ri[k]);
  for (const x of u.content || []) {
    if (x && x.type === "terminal" && x.terminalId) card.terminals.add(x.terminalId);
    if (x && x.type === "diff" && typeof x.path === "string") card.paths.add(x.path);
  }
}

// metaToolCallId returns a toolCallId an fs or terminal request names in
// its _meta (at any depth), or "".
function metaToolCallId(meta) {
  if (!meta || typeof meta !== "object") return "";
  for (const [k, v] of Object.entries(meta)) {
    if ((k === "toolCallId" || k === "tool_call_id") && typeof v === "string") return v;
    const sub = metaToolCallId(v);
    if (sub) return sub;
  }
  return "";
}

// attribute gives each fs/terminal request of a conversation the tool
// call that caused it, by what the wire gives, strongest first: a
// toolCallId in the request's _meta; the terminal, which the tool call's
// content embeds (terminal/create by the id its reply gave); the same
// path in the tool call's locations or raw input (a running one first);
// the tool call whose permission was just granted; the tool call running.
// All but the first two are inferred, and the page says so. A request
// none fits stays in the conversation where it came.
function attribute(c) {
  const cards = [...c.tools.values()];
  const running = (k, q) => k.seq < q.seq && (k.endSeq == null || k.endSeq > q.seq);
  const byTerminal = new Map();
  const drop = new Set();
  for (const q of c.items.filter((it) => it.type === "request")) {
    let card = null, basis = "";
    if (q.metaId && c.tools.has(q.metaId)) [card, basis] = [c.tools.get(q.metaId), "meta"];
    if (!card && q.terminalId) {
      const k = cards.find((k) => k.terminals.has(q.terminalId));
      if (k) [card, basis] = [k, "terminal"];
      else if (byTerminal.has(q.terminalId)) [card, basis] = byTerminal.get(q.terminalId);
    }
    if (!card && q.path) {
      const ks = cards.filter((k) => k.paths.has(q.path));
      const k = ks.filter((k) => running(k, q)).pop() || ks.find((k) => k.seq > q.seq) || ks.pop();
      if (k) [card, basis] = [k, "path"];
    }
    if (!card) {
      const k = cards.filter((k) => running(k, q) && k.permission && k.permission.reply && k.permission.reply < q.seq && k.permission.chosen &&
        String(k.permission.chosen.kind).startsWith("allow")).pop();
      if (k) [card, basis] = [k, "permission"];
    }
    if (!card) {
      const k = cards.filter((k) => running(k, q)).pop();
      if (k) [card, basis] = [k, "running"];
    }
    if (!card) continue;
    if (q.terminalId && !byTerminal.has(q.terminalId)) byTerminal.set(q.terminalId, [card, basis]);
    card.requests.push({ ...q, basis });
    drop.add(q);
  }
  c.items = c.items.filter((it) => !drop.has(it));
}

const linkText = {
  meta: "linked by the toolCallId in its _meta",
  terminal: "linked by its terminal, which the tool call shows",
  path: "inferred: the tool call names this path",
  permission: "inferred: right after the tool call's permission was granted",
  running: "inferred: the tool call running then",
};

// Harn's extension session updates (advertised under
// agentCapabilities._meta.harn.sessionUpdateExtensions) and its other
// notifications, each as a line of what it says: its fields are under
// update._meta.harn.
const harnKinds = {
  skill_activated: (h) => [`skill ${h.skillName || "?"} activated` + (h.iteration != null ? ` (iteration ${h.iteration})` : ""), h.reason],
  skill_deactivated: (h) => [`skill ${h.skillName || "?"} deactivated` + (h.iteration != null ? ` (iteration ${h.iteration})` : "")],
  skill_scope_tools: (h) => [`skill ${h.skillName || "?"} scopes the tools to ${list(h.allowedTools)}`],
  skill_narrow: (h) => [`tools narrowed: removed ${list(h.removedTools)}; ${list(h.remainingTools)} remain`, h.reason],
  tool_search_query: (h) => [`tool search${h.strategy ? " (" + h.strategy + ")" : ""}: ${typeof h.query === "string" ? h.query : JSON.stringify(h.query)}`],
  tool_search_result: (h) => [`tool search promoted ${list(h.promoted)}`],
  progress: (h) => [[h.phase, h.message].filter(Boolean).join(": ") + (h.progress != null ? ` (${h.progress}${h.total != null ? "/" + h.total : ""})` : "")],
  log: (h) => [`[${h.level || "log"}] ${h.message || ""}`, h.fields ? JSON.stringify(h.fields) : ""],
  artifact: (h) => [`artifact ${h.title || h.artifactId || ""}` + (h.mimeType ? ` (${h.mimeType}${h.sizeBytes != null ? ", " + fmtSize(h.sizeBytes) : ""})` : ""), h.kind],
  handoff: (h) => [`handoff ${h.handoffId || ""}` + (h.artifactId ? ` → artifact ${h.artifactId}` : "")],
  hitl_request: (h) => [`asks a human (${h.kind || "request"} ${h.requestId || ""})`, h.payload ? JSON.stringify(h.payload) : ""],
  hitl_resolved: (h) => [`a human answered (${h.kind || "request"} ${h.requestId || ""}): ${typeof h.outcome === "string" ? h.outcome : JSON.stringify(h.outcome)}`],
  reminder_emitted: (h) => { const r = h.reminder || {}; return [`reminder: ${r.body || ""}`, [list(r.tags), r.source, r.renderedRole].filter(Boolean).join(" · ")]; },
  worker_update: (h) => [`worker ${h.workerName || h.workerId || ""}: ${[h.event, h.status].filter(Boolean).join(", ")}`, h.workerTask],
  transcript_compacted: (h) => [`transcript compacted${h.mode ? " (" + h.mode + ")" : ""}: ~${h.estimatedTokensBefore ?? "?"} → ~${h.estimatedTokensAfter ?? "?"} tokens` + (h.archivedMessages != null ? `, ${h.archivedMessages} messages archived` : ""), h.reason],
  transcript_projected: (h) => [`transcript projected: kept ${h.keptCount ?? "?"}, dropped ${h.droppedCount ?? "?"}`, h.reason],
  fs_watch: (h) => [`fs watch ${h.subscriptionId || ""}: ${(h.events || []).length} events`, (h.events || []).map((e) => (e.kind || e.type || "") + " " + (e.path || "")).join(", ")],
  "agent/idle": (h) => [`idle (iteration ${h.iteration ?? "?"}, next check in ${h.backoff_ms ?? "?"} ms)`],
  composition_start: (h) => [`composition ${h.runId || ""} starts` + (h.language ? ` (${h.language})` : "")],
  composition_child_call: (h) => [`composition call ${h.binding || h.name || h.toolName || ""}` + (h.requestedSideEffectLevel ? ` (${h.requestedSideEffectLevel})` : "")],
  composition_child_result: (h) => [`composition result ${h.binding || h.name || h.toolName || ""}: ${h.status || ""}`],
  composition_finish: (h) => [`composition ${h.runId || ""} finished`],
  composition_error: (h) => [`composition ${h.runId || ""} failed` + (h.category ? `: ${h.category}` : "")],
};
const list = (xs) => (Array.isArray(xs) ? xs.map((x) => (typeof x === "string" ? x : x && (x.name || JSON.stringify(x)))).join(", ") : "") || "none";
function harnLine(kind, h) {
  const f = harnKinds[kind];
  if (f) { const [line, detail] = f(h || {}); return [line, detail || ""]; }
  return ["", JSON.stringify(h)];
}

// AgentPM harness events, by their payload's payload_type.
function agentpmLine(kind, pl) {
  const f = pl.fields ? " " + JSON.stringify(pl.fields) : "";
  switch (pl.payload_type) {
    case "lifecycle": return [pl.message || "", pl.fields ? JSON.stringify(pl.fields) : ""];
    case "service": return [`service ${pl.service || ""}: ${pl.status || ""}`, pl.fields && pl.fields.message || ""];
    case "preflight": return [`preflight ${pl.status || ""}: ${pl.fatal_count ?? 0} fatal, ${pl.warning_count ?? 0} warnings, ${pl.suppressed_count ?? 0} suppressed, ${pl.pending_count ?? 0} pending`, ""];
    case "phase": return [`phase ${pl.phase_id || ""}` + (pl.outcome ? `: ${pl.outcome}` : "") + (pl.transition_to ? ` → ${pl.transition_to}` : ""), pl.output != null ? JSON.stringify(pl.output) : ""];
    case "action": return [`${pl.action_kind || "action"} ${pl.identity || ""}: ${pl.status || ""}`, f.trim()];
    case "content": return [`${pl.label || "content"}: ${typeof pl.content === "string" ? pl.content : JSON.stringify(pl.content)}`, ""];
    case "usage": return [`usage: run ${JSON.stringify(pl.run_usage ?? null)}, session ${JSON.stringify(pl.session_usage ?? null)}`, ""];
    case "terminal": return [`terminal: ${pl.status || ""}`, pl.output != null ? JSON.stringify(pl.output) : ""];
    case "empty": case undefined: return ["", ""];
  }
  return ["", JSON.stringify(pl)];
}

function renderConversation() {
  const box = $("#conversation");
  box.replaceChildren();
  const pick = (seq) => () => selectFrame(seq);
  for (const c of conversation(frameRecords())) {
    const sec = el("div", { class: "conv-session", "data-acp-session": c.id }, el("h3", { text: (c.agentpm ? "AgentPM session " : "ACP session ") + c.id }));
    for (const it of c.items) {
      let node;
      switch (it.type) {
        case "user": case "agent": case "thought":
          node = el("div", { class: "msg " + it.type, "data-seq": it.seq, title: it.seqs ? `${it.seqs.length} chunks` : "" }, it.text);
          break;
        case "plan": {
          const ol = el("ol", { class: "plan" });
          for (const e of it.entries) ol.append(el("li", { "data-status": e.status || "" }, `${e.content || ""} `, el("span", { class: "badge", text: e.status || "" })));
          node = el("div", { class: "msg agent", "data-seq": it.seq }, el("strong", { text: "plan" }), ol);
          break;
        }
        case "tool": {
          const dur = it.end ? fmtLatency((it.end - it.start) * 1000) : "running";
          const head = el("div", { class: "head" }, el("span", { class: "badge", text: it.kind || "tool" }), el("strong", { text: it.title || it.id }),
            el("span", { class: "badge status", text: it.status }), el("span", { class: "dim", text: `${dur} · ${it.updates.length} updates` }));
          head.onclick = pick(it.seq);
          node = el("div", { class: "toolcard", "data-tool-call": it.id, "data-status": it.status, "data-seq": it.seq }, head);
          if (it.permission) {
            const pm = it.permission, ul = el("ul", { class: "options" });
            for (const o of pm.options) ul.append(el("li", { "data-option": o.optionId, class: pm.chosen && pm.chosen.optionId === o.optionId ? "chosen" : "" }, `${o.name} `, el("span", { class: "dim", text: o.kind || "" })));
            const kind = pm.chosen ? (String(pm.chosen.kind).startsWith("allow") ? "allow" : "reject") : "reject";
            const answer = el("div", { class: "answer " + kind, "data-seq": pm.reply || "" }, "answer: " + (pm.chosen ? pm.chosen.name + " (" + pm.chosen.optionId + ")" : pm.outcome));
            if (pm.reply) answer.onclick = pick(pm.reply);
            const q = el("div", { "data-seq": pm.seq }, "permission asked (#" + pm.seq + ")");
            q.onclick = pick(pm.seq);
            node.append(el("div", { class: "permission" }, q, ul, answer));
          }
          if (it.requests.length) {
            const ul = el("ul", { class: "caused" });
            for (const q of it.requests) {
              const li = el("li", { "data-seq": q.seq, "data-link": q.basis, class: q.error ? "err" : "" }, `${q.method} ${q.what} → ${q.reply == null ? "never answered" : q.error ? `error ${q.error.code}: ${q.error.message}` : "ok"}`,
                el("span", { class: "link-basis" + (q.basis === "meta" || q.basis === "terminal" ? "" : " inferred"), text: " · " + linkText[q.basis] }));
              li.onclick = pick(q.seq);
              ul.append(li);
            }
            node.append(ul);
          }
          break;
        }
        case "request":
          node = el("div", { class: "msg note" + (it.error ? " error" : ""), "data-seq": it.seq }, `${it.method} ${it.what}` + (it.error ? ` → error ${it.error.code}: ${it.error.message}` : ""));
          break;
        case "error":
          node = el("div", { class: "msg error", "data-seq": it.seq }, `${it.method || "request"} #${it.request} → error ${it.code}: ${it.message || ""}`);
          break;
        case "harn": {
          const [line, detail] = harnLine(it.kind, it.data);
          node = el("div", { class: "msg harn", "data-seq": it.seq, "data-render": it.kind }, el("span", { class: "badge harn", text: it.kind }), el("span", { class: "line", text: line }),
            detail ? el("div", { class: "detail", text: detail }) : null);
          break;
        }
        case "agentpm": {
          const [line, detail] = agentpmLine(it.kind, it.data);
          node = el("div", { class: "msg agentpm" + (it.data.payload_type === "content" ? " agent" : ""), "data-seq": it.seq, "data-render": it.kind, "data-payload": it.data.payload_type || "" },
            el("span", { class: "badge", text: it.kind }), it.data.payload_type && it.data.payload_type !== "empty" ? el("span", { class: "badge harn", text: it.data.payload_type }) : null,
            el("span", { class: "line", text: line }), detail ? el("div", { class: "detail", text: detail }) : null);
          break;
        }
        default:
          node = el("div", { class: "msg " + it.type, "data-seq": it.seq }, it.text || "");
      }
      if (!node.onclick && it.type !== "tool") node.onclick = pick(it.seq);
      sec.append(node);
    }
    box.append(sec);
  }
}

// The Context view: initialize as probe prints it, and the p50/p99 of
// each method's answered requests (the server's /api/context).
let contextFor = null;
async function renderContext() {
  const id = state.current;
  if (!id) return;
  const n = (state.records.get(id) || []).length;
  if (contextFor && contextFor.id === id && contextFor.n === n) return;
  contextFor = { id, n };
  let c;
  try { c = await getJSON(`api/context?session=${encodeURIComponent(id)}`); } catch (e) { $("#init-summary").textContent = "context: " + e.message; return; }
  if (state.current !== id) return;
  const pre = $("#init-summary");
  pre.textContent = c.initialize || "no initialize in this session";
  pre.classList.toggle("dim", !c.initialize);
  $("#init-seq").replaceChildren();
  if (c.initializeSeq) {
    const a = el("a", { "data-seq": c.initializeSeq, text: `reply #${c.initializeSeq}` });
    a.onclick = () => { showView("timeline"); selectFrame(c.initializeSeq); };
    $("#init-seq").append(a);
  }
  const tbody = $("#latency tbody");
  tbody.replaceChildren();
  for (const m of c.latency) {
    tbody.append(el("tr", { "data-method": m.method, "data-dir": m.dir },
      el("td", { class: "mono", text: m.method }), el("td", { class: "dir-" + m.dir, text: m.dir === "in" ? "→ in" : "← out" }),
      el("td", { text: m.count }), el("td", { class: "p50", text: m.count ? fmtLatency(m.p50_us) : "" }),
      el("td", { class: "p99", text: m.count ? fmtLatency(m.p99_us) : "" }), el("td", { text: m.count ? fmtLatency(m.max_us) : "" }),
      el("td", { class: m.errors ? "err" : "", text: m.errors || "" }), el("td", { class: m.unanswered ? "err" : "", text: m.unanswered || "" })));
  }
}

function renderWaterfall() {
  const box = $("#waterfall");
  box.replaceChildren();
  const frs = frameRecords();
  if (!frs.length) return;
  const t0 = startOf();
  const end = Math.max(...frs.map((r) => Date.parse(r.time))) - t0 || 1;
  const bySeq = new Map(frs.map((r) => [r.seq, r]));
  const replies = new Map(frs.filter((r) => r.reply_to).map((r) => [r.reply_to, r]));
  for (const q of frs.filter((r) => r.kind === "request")) {
    if (!visible(q)) continue;
    const a = replies.get(q.seq);
    const start = Date.parse(q.time) - t0;
    const stop = a ? start + (a.latency_us || 0) / 1000 : end;
    const bar = el("div", { class: "bar " + q.dir + (a ? "" : " unanswered"), title: `${q.method} ${a ? fmtLatency(a.latency_us) : "never answered"}` });
    bar.style.left = (100 * start / end) + "%";
    bar.style.width = Math.max(0.2, 100 * (stop - start) / end) + "%";
    const row = el("div", { class: "row", "data-seq": q.seq }, el("div", { class: "label", text: `#${q.seq} ${q.dir === "in" ? "→" : "←"} ${q.method}` }),
      el("div", { class: "lane" }, bar), el("div", { class: "dim", text: a ? fmtLatency(a.latency_us) : "unanswered" }));
    row.onclick = () => { showView("timeline"); selectFrame(q.seq); };
    box.append(row);
  }
  void bySeq;
}

// The diff is the server's (/api/diff): frames aligned by direction,
// kind, method and update type, compared under replay's rules, so ids,
// session ids, tool call ids, UUIDs and times that differ consistently
// are not differences. A changed row opens to the two frames side by
// side, their differences marked.
const diffState = { res: null };
const shapeOf = (f) => `${f.dir === "in" ? "→" : "←"} ${f.method || f.kind}${f.kind === "response" ? " reply" : f.kind === "error" ? " error" : f.kind === "request" || f.kind === "notification" ? "" : " " + f.kind}${f.update ? " · " + f.update : ""}`;

async function renderDiff() {
  const a = $("#diff-a").value, b = $("#diff-b").value;
  if (!a || !b) return;
  $("#diff").removeAttribute("data-changes");
  const q = new URLSearchParams({ a, b });
  if (!$("#diff-rules").checked) q.set("defaults", "0");
  const tbody = $("#diff tbody");
  let res;
  try {
    const r = await fetch("api/diff?" + q, { cache: "no-store" });
    if (!r.ok) throw new Error(await r.text());
    res = await r.json();
  } catch (e) {
    tbody.replaceChildren(el("tr", {}, el("td", { colspan: 4, class: "err", text: "diff: " + e.message })));
    return;
  }
  await Promise.all([loadRecords(a), loadRecords(b)]);
  diffState.res = res;
  tbody.replaceChildren();
  const cls = { "=": "same", "~": "changed", "+": "added", "-": "removed" };
  res.rows.forEach((row, i) => {
    const note = row.op === "+" ? "only in B" : row.op === "-" ? "only in A" : row.op === "~" ?
      row.differences.map((d) => (d.pointer || "frame") + (d.message && !d.message.startsWith("only in") ? "" : d.message ? " " + d.message : "")).join(", ") : "";
    const tr = el("tr", { class: cls[row.op], "data-row": i, "data-a": row.a ? row.a.seq : "", "data-b": row.b ? row.b.seq : "" },
      el("td", { text: row.op === "-" ? "−" : row.op }),
      el("td", { class: "mono", text: row.a ? `#${row.a.seq} ${shapeOf(row.a)}` : "" }),
      el("td", { class: "mono", text: row.b ? `#${row.b.seq} ${shapeOf(row.b)}` : "" }),
      el("td", { class: "note", text: note }));
    tr.onclick = () => openDiffRow(i);
    tbody.append(tr);
  });
  $("#diff").setAttribute("data-changes", res.changes);
  $("#diff-summary").textContent = `${res.rows.length} rows, ${res.changes} changed · ${res.bound.length} values bound (A's stands for B's)` +
    ` · rules: ${res.rules.join(", ") || "none"}`;
  $("#diff-summary").title = res.bound.map((x) => `${x.a} ↔ ${x.b}`).join("\n");
}

// openDiffRow shows a diff row's frames side by side in the detail pane,
// each difference marked at its pointer.
function openDiffRow(i) {
  const res = diffState.res, row = res && res.rows[i];
  if (!row) return;
  for (const tr of document.querySelectorAll("#diff tbody tr")) tr.classList.toggle("on", +tr.dataset.row === i);
  const find = (sid, ref) => ref ? (state.records.get(sid) || []).find((r) => r.type === "frame" && r.seq === ref.seq) : null;
  const fa = find(res.a, row.a), fb = find(res.b, row.b);
  $("#detail-title").textContent = `diff: A ${row.a ? "#" + row.a.seq : "—"} ${row.op === "-" ? "−" : row.op} B ${row.b ? "#" + row.b.seq : "—"}`;
  $("#rendered").replaceChildren();
  $("#copy-frame").disabled = true;
  $("#copied").textContent = "";
  const box = $("#pair");
  box.replaceChildren();
  box.classList.add("diffpair");
  const marks = (side) => new Map((row.differences || []).filter((d) => d.pointer).map((d) => [d.pointer, {
    code: "≠", message: d.message && d.message.startsWith("only in") ? d.message : d.message || `A ${d.a ?? "(none)"} · B ${d.b ?? "(none)"}`, side }]));
  const side = (label, sid, r) => {
    const d = el("div", { class: "side", "data-side": label });
    d.append(el("h2", { text: `${label}: ${sid}` + (r ? ` #${r.seq}` : " (none)") }));
    if (r) {
      const doc = parseRaw(r);
      d.append(doc === undefined ? el("pre", { text: r.raw != null ? r.raw : "(base64) " + r.raw_base64 }) : tree(doc, "", marks(label), undefined, "differs"));
    }
    return d;
  };
  box.append(side("A", res.a, fa), side("B", res.b, fb));
  const list = el("ul", { class: "diffpoints" });
  for (const d of row.differences || []) list.append(el("li", {}, el("span", { class: "pointer mono", text: d.pointer || "(frame)" }), " ",
    d.message || "", d.a != null || d.b != null ? el("span", { class: "mono dim", text: ` A ${d.a ?? "—"} · B ${d.b ?? "—"}` }) : null));
  if ((row.differences || []).length) box.append(list);
}

// Sharing: copy one frame, export the session, import a file.
async function copyFrame() {
  const r = timelineRecords().find((x) => x.seq === state.selected);
  if (!r) return;
  const text = r.raw != null ? r.raw : r.raw_base64;
  let ok = false;
  try { await navigator.clipboard.writeText(text); ok = true; } catch {
    // No clipboard API (a page not in focus, an old browser): the
    // selection's copy command.
    const ta = el("textarea", {});
    ta.value = text;
    document.body.append(ta);
    ta.select();
    try { ok = document.execCommand("copy"); } catch { ok = false; }
    ta.remove();
  }
  $("#copied").textContent = ok ? `copied #${r.seq} (${fmtSize(text.length)})` : "could not copy: select the Raw tab's text";
  $("#copied").dataset.seq = ok ? r.seq : "";
}

function updateExport() {
  const a = $("#export");
  if (state.current) {
    a.href = `api/export?session=${encodeURIComponent(state.current)}`;
    a.setAttribute("download", state.current.replace(/[^A-Za-z0-9._-]/g, "_") + ".jsonl");
  } else a.removeAttribute("href");
}

async function importFile(file) {
  const status = $("#notice");
  try {
    const r = await fetch(`api/import?name=${encodeURIComponent(file.name)}`, { method: "POST", headers: { "Content-Type": "application/x-ndjson" }, body: file });
    if (!r.ok) throw new Error(await r.text());
    const res = await r.json();
    status.textContent = `imported ${res.sessions.join(", ")}`;
    await poll();
    if (res.sessions.length) selectSession(res.sessions[0]);
  } catch (e) {
    status.textContent = "import failed: " + e.message;
  }
}

// Keyboard: j/k or ↓/↑ move through the rows of the view (the timeline's
// frames, the diff's rows, the conversation's items), Enter opens the
// row, / goes to the search box, 1-5 switch views, c copies the frame,
// Esc leaves a field.
const viewOrder = ["timeline", "conversation", "context", "waterfall", "diff"];
function rowsOfView() {
  switch (state.view) {
    case "timeline": return [...document.querySelectorAll("#timeline tbody tr")];
    case "diff": return [...document.querySelectorAll("#diff tbody tr")];
    case "conversation": return [...document.querySelectorAll("#conversation .msg[data-seq], #conversation .toolcard .head")];
    case "waterfall": return [...document.querySelectorAll("#waterfall .row")];
  }
  return [];
}
function move(delta) {
  const rows = rowsOfView();
  if (!rows.length) return;
  let i = rows.findIndex((r) => r.classList.contains("on") || (r.parentElement && r.parentElement.classList.contains("on") && r.classList.contains("head")));
  i = i < 0 ? (delta > 0 ? 0 : rows.length - 1) : Math.min(rows.length - 1, Math.max(0, i + delta));
  const row = rows[i];
  if (state.view === "diff") { openDiffRow(+row.dataset.row); }
  else if (state.view === "waterfall") { for (const r of rows) r.classList.toggle("on", r === row); }
  else if (state.view === "conversation") { row.click(); for (const r of rows) r.classList.toggle("on", r === row); }
  else selectFrame(+row.dataset.seq);
  row.scrollIntoView({ block: "nearest" });
}
function onKey(e) {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const t = e.target;
  if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA")) {
    if (e.key === "Escape") t.blur();
    return;
  }
  switch (e.key) {
    case "j": case "ArrowDown": move(1); break;
    case "k": case "ArrowUp": move(-1); break;
    case "Enter": {
      const rows = rowsOfView(), row = rows.find((r) => r.classList.contains("on"));
      if (row && state.view === "waterfall") row.click();
      break;
    }
    case "/": $("#filter-text").focus(); break;
    case "c": copyFrame(); break;
    case "Escape": state.selected = null; for (const r of document.querySelectorAll("tr.on")) r.classList.remove("on"); break;
    default:
      if (/^[1-5]$/.test(e.key)) showView(viewOrder[+e.key - 1]); else return;
  }
  e.preventDefault();
}

function showView(v) {
  state.view = v;
  for (const b of document.querySelectorAll("#views button")) b.classList.toggle("on", b.dataset.view === v);
  for (const d of document.querySelectorAll(".view")) d.classList.toggle("on", d.id === "view-" + v);
  if (v === "waterfall") renderWaterfall();
  if (v === "conversation") renderConversation();
  if (v === "context") renderContext();
}

function init() {
  for (const b of document.querySelectorAll("#views button")) b.onclick = () => showView(b.dataset.view);
  for (const b of document.querySelectorAll("#detail-tabs button")) b.onclick = () => {
    for (const x of document.querySelectorAll("#detail-tabs button")) x.classList.toggle("on", x === b);
    for (const t of document.querySelectorAll("#detail .tab")) t.classList.toggle("on", t.id === "tab-" + b.dataset.tab || t.id === "tab-" + b.dataset.tab + "-body");
  };
  $("#session").onchange = (e) => selectSession(e.target.value);
  for (const id of filterIDs) { $(id).oninput = renderCurrent; $(id).onchange = renderCurrent; }
  $("#diff-go").onclick = renderDiff;
  $("#copy-frame").onclick = copyFrame;
  $("#import").onclick = () => $("#import-file").click();
  $("#import-file").onchange = (e) => { if (e.target.files[0]) importFile(e.target.files[0]); e.target.value = ""; };
  document.addEventListener("keydown", onKey);
  poll();
  setInterval(poll, 1000);
}
document.addEventListener("DOMContentLoaded", init);
