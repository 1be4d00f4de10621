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
    if (!state.current && state.sessions.length) state.current = state.sessions[0].id;
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

function renderSessions() {
  const ul = $("#sessions"), sel = $("#session"), a = $("#diff-a"), b = $("#diff-b");
  ul.replaceChildren();
  const opts = [sel, a, b].map((s) => [s, s.value]);
  for (const [s] of opts) s.replaceChildren();
  for (const s of state.sessions) {
    const status = s.ended ? (s.status != null ? "exit " + s.status : "ended") : "live";
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
  state.selected = null;
  renderSessions();
  renderCurrent();
  loadRecords(id).then(renderCurrent);
}

const frameRecords = () => (state.records.get(state.current) || []).filter((r) => r.type === "frame");

function visible(r) {
  const m = $("#filter-method").value.trim();
  if (m && !(r.method || "").includes(m)) return false;
  if ($("#filter-errors").checked && !(r.problems && r.problems.length)) return false;
  return true;
}

function fmtLatency(us) {
  if (us == null) return "";
  if (us >= 1e6) return (us / 1e6).toFixed(2) + " s";
  if (us >= 1e3) return (us / 1e3).toFixed(1) + " ms";
  return us.toFixed(0) + " µs";
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
  const key = [state.current, $("#filter-method").value, $("#filter-errors").checked].join("\u0000");
  const all = frameRecords();
  if (rendered.key !== key) { tbody.replaceChildren(); rendered.key = key; rendered.count = 0; tbody.dataset.session = state.current || ""; }
  const t0 = startOf();
  for (const r of all.slice(rendered.count)) {
    if (!visible(r)) continue;
    const n = (r.problems || []).length;
    const tr = el("tr", { "data-seq": r.seq, class: (n ? "problem " : "") + (state.selected === r.seq ? "on" : "") },
      el("td", { text: r.seq }),
      el("td", { class: "mono", text: "+" + ((Date.parse(r.time) - t0) / 1000).toFixed(3) + "s" }),
      el("td", { class: "dir-" + r.dir, text: r.dir === "in" ? "→ in" : "← out" }),
      el("td", { text: r.kind }),
      el("td", { class: "mono", text: (r.method || "") + (r.qualifier ? ` [${r.qualifier}]` : "") }),
      el("td", { class: "mono", text: r.id != null ? JSON.stringify(r.id) : "" }),
      el("td", { text: fmtSize(r.size || 0) + (r.truncated ? " (cut)" : "") }),
      el("td", { text: fmtLatency(r.latency_us) }),
      el("td", { text: n ? n + " ✗" : "" }));
    tr.onclick = () => selectFrame(r.seq);
    tbody.append(tr);
  }
  rendered.count = all.length;
  const end = (state.records.get(state.current) || []).find((r) => r.type === "end");
  $("#end").textContent = end ? `session ended: exit status ${end.status}${end.signal ? " (" + end.signal + ")" : ""}` +
    ((end.unanswered || []).length ? ` · never answered: ${end.unanswered.map((u) => `${u.method} ${u.id}`).join(", ")}` : "") : "session live";
  if (state.view === "waterfall") renderWaterfall();
}

function parseRaw(r) {
  if (r.raw == null) return undefined;
  try { return JSON.parse(r.raw); } catch { return undefined; }
}

function selectFrame(seq) {
  state.selected = seq;
  for (const tr of document.querySelectorAll("#timeline tbody tr")) tr.classList.toggle("on", +tr.dataset.seq === seq);
  const r = frameRecords().find((x) => x.seq === seq);
  if (!r) return;
  $("#detail-title").textContent = `#${r.seq} ${r.dir === "in" ? "→" : "←"} ${r.kind} ${r.method || ""}`;
  const doc = parseRaw(r);
  const bad = new Map((r.problems || []).filter((p) => p.pointer).map((p) => [p.pointer, p]));
  $("#tab-tree").replaceChildren(doc === undefined ? el("p", { class: "dim", text: r.truncated ? "recorded truncated: see Raw" : "not JSON: see Raw" }) : tree(doc, "", bad));
  $("#tab-raw").textContent = r.raw != null ? r.raw : "(base64) " + r.raw_base64;
  renderSchema(r, doc);
  renderRendered(r, doc);
}

function tree(v, ptr, bad, key) {
  const mark = (e) => {
    const p = bad.get(ptr);
    if (p) { e.classList.add("violation"); e.setAttribute("data-pointer", ptr); e.append(el("span", { class: "violation-note", text: "✗ " + p.code + ": " + p.message })); }
    return e;
  };
  const label = key != null ? [el("span", { class: "k", text: JSON.stringify(key) }), ": "] : [];
  if (v !== null && typeof v === "object") {
    const isArr = Array.isArray(v);
    const entries = isArr ? v.map((x, i) => [i, x]) : Object.entries(v);
    const d = el("details", { open: "" }, mark(el("summary", {}, ...label, isArr ? `[${entries.length}]` : `{${entries.length}}`)));
    for (const [k, x] of entries) d.append(tree(x, ptr + "/" + String(k).replace(/~/g, "~0").replace(/\//g, "~1"), bad, isArr ? k : k));
    // a missing member: its pointer names a child that is not there
    for (const [p, pr] of bad) {
      if (p.startsWith(ptr + "/") && !p.slice(ptr.length + 1).includes("/") && !(decodeSeg(p.slice(ptr.length + 1)) in v)) {
        d.append(el("div", { class: "leaf violation", "data-pointer": p }, el("span", { class: "k", text: JSON.stringify(decodeSeg(p.slice(ptr.length + 1))) }), ": (missing)",
          el("span", { class: "violation-note", text: "✗ " + pr.code + ": " + pr.message })));
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

function shape(r) { return `${r.dir} ${r.kind} ${r.method || ""}`; }
function body(r) {
  const d = parseRaw(r);
  if (!d || typeof d !== "object") return r.raw;
  delete d.id;
  return JSON.stringify(d);
}

async function renderDiff() {
  const a = $("#diff-a").value, b = $("#diff-b").value;
  if (!a || !b) return;
  const A = (await loadRecords(a)).filter((r) => r.type === "frame"), B = (await loadRecords(b)).filter((r) => r.type === "frame");
  // longest common subsequence of the frames' shapes
  const n = A.length, m = B.length, L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) L[i][j] = shape(A[i]) === shape(B[j]) ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const tbody = $("#diff tbody");
  tbody.replaceChildren();
  const row = (cls, mark, x, y, note) => tbody.append(el("tr", { class: cls }, el("td", { text: mark }),
    el("td", { class: "mono", text: x ? `#${x.seq} ${shape(x)}` : "" }), el("td", { class: "mono", text: y ? `#${y.seq} ${shape(y)}` : "" }), el("td", { text: note || "" })));
  let i = 0, j = 0, changes = 0;
  while (i < n || j < m) {
    if (i < n && j < m && shape(A[i]) === shape(B[j])) {
      const same = body(A[i]) === body(B[j]);
      if (!same) changes++;
      row(same ? "same" : "changed", same ? "=" : "~", A[i], B[j], same ? "" : "same frame, different content");
      i++; j++;
    } else if (j < m && (i === n || L[i][j + 1] >= L[i + 1][j])) { row("added", "+", null, B[j], "only in B"); j++; changes++; }
    else { row("removed", "−", A[i], null, "only in A"); i++; changes++; }
  }
  $("#diff").setAttribute("data-changes", changes);
}

function showView(v) {
  state.view = v;
  for (const b of document.querySelectorAll("#views button")) b.classList.toggle("on", b.dataset.view === v);
  for (const d of document.querySelectorAll(".view")) d.classList.toggle("on", d.id === "view-" + v);
  if (v === "waterfall") renderWaterfall();
}

function init() {
  for (const b of document.querySelectorAll("#views button")) b.onclick = () => showView(b.dataset.view);
  for (const b of document.querySelectorAll("#detail-tabs button")) b.onclick = () => {
    for (const x of document.querySelectorAll("#detail-tabs button")) x.classList.toggle("on", x === b);
    for (const t of document.querySelectorAll("#detail .tab")) t.classList.toggle("on", t.id === "tab-" + b.dataset.tab || t.id === "tab-" + b.dataset.tab + "-body");
  };
  $("#session").onchange = (e) => selectSession(e.target.value);
  $("#filter-method").oninput = renderCurrent;
  $("#filter-errors").onchange = renderCurrent;
  $("#diff-go").onclick = renderDiff;
  poll();
  setInterval(poll, 1000);
}
document.addEventListener("DOMContentLoaded", init);
