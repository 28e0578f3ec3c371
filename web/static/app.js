// The sdnlb dashboard: VIPs with their pools' members, health and traffic,
// pools without a VIP, and monitors; forms to create, edit and delete each,
// to drain and re-weight members and to attach monitors to pools.
// The configuration is reloaded when the change feed says something changed;
// traffic counters and switches are polled every second.
"use strict";

const state = {
  vips: [], pools: [], members: new Map(), monitors: [], stats: new Map(),
  switches: null, // null: unknown (not readable)
};
let token = sessionStorage.getItem("sdnlb-token") || "";

// ---------------------------------------------------------------- API

class APIError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status;
    this.code = e.code || "";
    this.field = e.field || "";
  }
}

function headers(extra) {
  return Object.assign(token ? { Authorization: "Bearer " + token } : {}, extra || {});
}

// api sends one request; a body is sent as JSON (merge patch on PATCH). A
// 401 asks for the token and sends the request again once it is given.
async function api(method, path, body) {
  for (let attempt = 0; attempt < 3; attempt++) {
    const init = { method, headers: headers() };
    if (body !== undefined) {
      init.headers["Content-Type"] = method === "PATCH" ? "application/merge-patch+json" : "application/json";
      init.body = JSON.stringify(body);
    }
    const resp = await fetch(path, init);
    if (resp.status === 401) {
      if (!(await askToken(token ? "The token was refused." : "This sdnlb needs a token for this."))) {
        throw new APIError(401, { error: { message: "a token is required" } });
      }
      continue;
    }
    const text = await resp.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch { data = null; }
    if (!resp.ok) throw new APIError(resp.status, data);
    return data;
  }
  throw new APIError(401, { error: { message: "the token was refused" } });
}

// listAll follows the API's keyset pagination to the end.
async function listAll(path, key) {
  const items = [];
  let after = "";
  for (let page = 0; page < 10000; page++) {
    const data = await api("GET", `${path}?limit=1000&after=${encodeURIComponent(after)}`);
    items.push(...data[key]);
    after = data.next;
    if (!after) break;
  }
  return items;
}

const byName = (a, b) => (a.name || a.id).localeCompare(b.name || b.id) || a.id.localeCompare(b.id);
// Members sort by address as numbers, then port, then id.
function addrKey(a) { return a.split(".").map((x) => x.padStart(3, "0")).join("."); }
const byAddr = (a, b) => addrKey(a.address).localeCompare(addrKey(b.address)) || a.port - b.port || a.id.localeCompare(b.id);

async function loadConfig() {
  const [vips, pools, members, monitors] = await Promise.all([
    listAll("/v1/vips", "vips"), listAll("/v1/pools", "pools"),
    listAll("/v1/members", "members"), listAll("/v1/monitors", "monitors"),
  ]);
  state.vips = vips.sort(byName);
  state.pools = pools.sort(byName);
  state.monitors = monitors.sort(byName);
  state.members = new Map();
  for (const m of members.sort(byAddr)) {
    if (!state.members.has(m.pool_id)) state.members.set(m.pool_id, []);
    state.members.get(m.pool_id).push(m);
  }
  await loadStats();
}

async function loadStats() {
  const results = await Promise.allSettled(
    state.pools.map((p) => api("GET", `/v1/pools/${encodeURIComponent(p.id)}/stats`).then((s) => [p.id, s])),
  );
  state.stats = new Map(results.filter((r) => r.status === "fulfilled").map((r) => r.value));
  try {
    state.switches = (await api("GET", "/v1/switches")).switches;
  } catch {
    state.switches = null;
  }
  render();
}

// ---------------------------------------------------------------- rendering

const fmt = new Intl.NumberFormat();
function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}
function ago(t) {
  if (!t) return "";
  const s = Math.max(0, Math.round((Date.now() - Date.parse(t)) / 1000));
  return s < 90 ? `${s}s ago` : s < 5400 ? `${Math.round(s / 60)}m ago` : `${Math.round(s / 3600)}h ago`;
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function button(text, title, onclick, cls) {
  return el("button", { type: "button", class: cls || "quiet", title, onclick }, text);
}

// idChip shows an id with a button that copies it.
function idChip(id) {
  return el("span", { class: "id" }, el("code", {}, id),
    button("⧉", "copy the id", async (e) => {
      try {
        await navigator.clipboard.writeText(id);
        e.target.textContent = "✓";
      } catch {
        // Clipboards need a secure context: select the text instead.
        const r = document.createRange();
        r.selectNodeContents(e.target.previousSibling);
        getSelection().removeAllRanges();
        getSelection().addRange(r);
      }
      setTimeout(() => { e.target.textContent = "⧉"; }, 1000);
    }, "copy"));
}

function pill(text, cls, title) {
  return el("span", { class: "pill " + (cls || text), title }, text);
}

// vipStatus is the VIP's status as the store derives it, corrected for what
// the store cannot know: with no switch connected nothing is balanced.
function vipStatus(vip) {
  if (vip.status === "ACTIVE" && state.switches && state.switches.length === 0) {
    return pill("NO SWITCH", "DOWN", "ACTIVE in the configuration, but no switch is connected: nothing carries its traffic");
  }
  return pill(vip.status);
}

function render() {
  // Re-rendering would take the focus and the typed value from a field.
  const focus = document.activeElement;
  if (focus && document.querySelector("main").contains(focus) && /INPUT|SELECT/.test(focus.tagName)) return;

  const sw = document.getElementById("switches");
  if (state.switches === null) {
    sw.textContent = ""; sw.className = "";
  } else if (state.switches.length === 0) {
    sw.textContent = "no switch connected"; sw.className = "pill DOWN";
    sw.title = "Point a switch at sdnlb's OpenFlow port: until then no VIP carries traffic";
  } else {
    const n = state.switches.length;
    sw.textContent = `${n} switch${n === 1 ? "" : "es"} connected`; sw.className = "pill UP";
    sw.title = state.switches.map((s) => `${s.dpid} ${s.address}`).join("\n");
  }

  const vips = document.getElementById("vips");
  vips.replaceChildren(el("h2", { class: "section" }, `VIPs (${state.vips.length})`));
  if (state.vips.length === 0) {
    vips.append(el("p", { class: "muted" }, "No VIP yet: ", button("create one", "", () => openForm("vip"), "link"), "."));
  }
  const poolByVIP = new Map(state.pools.filter((p) => p.vip_id).map((p) => [p.vip_id, p]));
  const tpl = document.getElementById("vip-tpl");
  for (const vip of state.vips) {
    const card = tpl.content.firstElementChild.cloneNode(true);
    card.dataset.id = vip.id;
    card.querySelector(".name").textContent = vip.name || vip.id;
    card.querySelector(".addr").textContent =
      `${vip.protocol} ${vip.address}${vip.protocol === "ICMP" || vip.protocol === "ANY" ? "" : ":" + vip.port}`;
    card.querySelector(".status").replaceWith(vipStatus(vip));
    card.querySelector(".ids").append(idChip(vip.id), el("span", { class: "muted" }, ` MAC ${vip.mac}`));
    card.querySelector(".tools").append(
      button("edit", "edit the VIP", () => openForm("vip", vip)),
      button("delete", "delete the VIP", () => remove("vip", vip)),
    );
    const pool = poolByVIP.get(vip.id);
    const pools = card.querySelector(".pools");
    if (pool) pools.append(renderPool(pool, vip));
    else pools.append(el("p", { class: "muted" }, "No pool serves this VIP: ",
      button("create one", "", () => openForm("pool", null, { vip_id: vip.id, protocol: vip.protocol }), "link"), "."));
    vips.append(card);
  }

  const orphans = document.getElementById("orphans");
  const alone = state.pools.filter((p) => !p.vip_id);
  orphans.replaceChildren();
  if (alone.length) {
    orphans.append(el("h2", { class: "section" }, `Pools without a VIP (${alone.length})`));
    for (const p of alone) orphans.append(el("article", { class: "card" }, renderPool(p, null)));
  }

  renderMonitors();
}

function renderPool(pool, vip) {
  const div = document.getElementById("pool-tpl").content.firstElementChild.cloneNode(true);
  div.dataset.id = pool.id;
  const stats = state.stats.get(pool.id);
  div.querySelector(".label").append(el("strong", {}, `pool ${pool.name || pool.id}`),
    pool.admin_state_up ? "" : " ", pool.admin_state_up ? "" : pill("DISABLED"));
  div.querySelector(".ids").append(idChip(pool.id));
  div.querySelector(".desc").textContent = ` ${pool.lb_method} · ${pool.dispatch} dispatch · ${pool.forwarding}` +
    (stats ? ` · ${fmt.format(stats.refused_connections)} refused` : "");
  const mons = div.querySelector(".monitors");
  for (const id of pool.monitor_ids) {
    const mon = state.monitors.find((m) => m.id === id);
    mons.append(el("span", { class: "chip" }, `${mon ? mon.name || mon.id : id} (${mon ? mon.type : "?"})`,
      button("×", "detach this monitor", () => act(() => api("DELETE",
        `/v1/pools/${encodeURIComponent(pool.id)}/monitors/${encodeURIComponent(id)}`)))));
  }
  const free = state.monitors.filter((m) => !pool.monitor_ids.includes(m.id));
  if (free.length) {
    const sel = el("select", { class: "attach", title: "attach a monitor",
      onchange: (e) => { const id = e.target.value; e.target.blur(); if (id) act(() => api("POST",
        `/v1/pools/${encodeURIComponent(pool.id)}/monitors`, { monitor_id: id })); } },
    el("option", { value: "" }, "+ monitor…"), ...free.map((m) => el("option", { value: m.id }, m.name || m.id)));
    mons.append(sel);
  }
  div.querySelector(".tools").append(
    button("+ member", "add a member", () => openForm("member", null, { pool_id: pool.id })),
    button("edit", "edit the pool", () => openForm("pool", pool)),
    button("delete", "delete the pool", () => remove("pool", pool)),
  );
  const body = div.querySelector("tbody");
  const perMember = new Map((stats ? stats.members : []).map((m) => [m.member_id, m]));
  const monitored = pool.monitor_ids.length > 0;
  const members = state.members.get(pool.id) || [];
  for (const m of members) {
    const s = perMember.get(m.id) || {};
    const tr = body.insertRow();
    tr.dataset.id = m.id;
    // Check results are only shown while a monitor still checks the member.
    const check = monitored && m.health.last_check
      ? `${m.health.last_latency_ms.toFixed(1)} ms${m.health.last_error ? " · " + m.health.last_error : ""}` : "";
    const weight = el("input", { type: "number", min: 0, max: 256, value: m.weight, class: "weight",
      title: "weight (0 drains); Enter to apply",
      onchange: (e) => { const w = Number(e.target.value); e.target.blur(); act(() => api("PATCH",
        `/v1/members/${encodeURIComponent(m.id)}`, { weight: w })); } });
    const cells = [
      `${m.address}:${m.port || (vip ? vip.port : "VIP port")}`, idChip(m.id), weight,
      pill(m.status), ago(m.health.since), check,
      fmt.format(s.active_connections || 0), fmt.format(s.total_connections || 0),
      fmt.format(s.packets_in || 0), fmt.format(s.packets_out || 0),
      bytes(s.bytes_in || 0), bytes(s.bytes_out || 0),
      el("span", { class: "tools" },
        button(m.admin_state_up ? "drain" : "undrain", m.admin_state_up
          ? "admin down: keep its connections, send it no new ones" : "admin up: back into rotation",
        () => act(() => api("PATCH", `/v1/members/${encodeURIComponent(m.id)}`, { admin_state_up: !m.admin_state_up }))),
        button("edit", "edit the member", () => openForm("member", m)),
        button("delete", "delete the member", () => remove("member", m))),
    ];
    cells.forEach((c, i) => {
      const td = tr.insertCell();
      td.append(c);
      if (i >= 6 && i <= 11) td.className = "n";
      if (i === 3) td.className = "status";
    });
  }
  if (members.length === 0) {
    const td = body.insertRow().insertCell();
    td.colSpan = 13;
    td.className = "muted";
    td.textContent = "no member yet";
  }
  if (stats) {
    const tr = div.querySelector("tfoot").insertRow();
    ["pool total", "", "", "", "", "", fmt.format(stats.active_connections), fmt.format(stats.total_connections),
      fmt.format(stats.packets_in), fmt.format(stats.packets_out), bytes(stats.bytes_in), bytes(stats.bytes_out), "",
    ].forEach((t, i) => { const td = tr.insertCell(); td.textContent = t; if (i >= 6 && i <= 11) td.className = "n"; });
  }
  return div;
}

function renderMonitors() {
  const sec = document.getElementById("monitors");
  sec.replaceChildren(el("h2", { class: "section" }, `Monitors (${state.monitors.length})`));
  if (state.monitors.length === 0) {
    sec.append(el("p", { class: "muted" }, "No monitor yet: ", button("create one", "", () => openForm("monitor"), "link"), "."));
    return;
  }
  const table = el("table", { class: "card" }, el("thead", {}, el("tr", {},
    ...["name", "id", "type", "every", "timeout", "down after", "up after", "check", "pools", ""].map((h) => el("th", {}, h)))));
  const body = table.createTBody();
  for (const m of state.monitors) {
    const tr = body.insertRow();
    tr.dataset.id = m.id;
    const check = m.type === "HTTP" || m.type === "HTTPS" ? `${m.http_method} ${m.url_path} → ${m.expected_codes}` : "";
    [m.name || m.id, idChip(m.id), m.type, `${m.delay} s`, `${m.timeout} s`, `${m.max_retries} failures`,
      `${m.rise} passes`, check, (m.pool_ids || []).join(", "),
      el("span", { class: "tools" },
        button("edit", "edit the monitor", () => openForm("monitor", m)),
        button("delete", "delete the monitor", () => remove("monitor", m))),
    ].forEach((c) => tr.insertCell().append(c));
  }
  sec.append(table);
}

// ---------------------------------------------------------------- actions

function toast(text, isError) {
  const t = document.getElementById("toast");
  t.textContent = text;
  t.className = isError ? "err" : "";
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.hidden = true; }, 6000);
}

// act runs a write and reloads; errors go to the toast.
async function act(f) {
  try {
    await f();
    await loadConfig();
  } catch (err) {
    toast(err.message, true);
  }
}

const paths = { vip: "/v1/vips", pool: "/v1/pools", member: "/v1/members", monitor: "/v1/monitors" };

async function remove(kind, obj) {
  const what = `${kind} ${obj.name || obj.id}`;
  if (!confirm(`Delete ${what}?`)) return;
  const path = `${paths[kind]}/${encodeURIComponent(obj.id)}`;
  try {
    await api("DELETE", path);
  } catch (err) {
    if (err.code !== "conflict") return toast(err.message, true);
    if (!confirm(`${err.message}\n\nDelete ${what} with what depends on it (cascade)?`)) return;
    try { await api("DELETE", path + "?cascade=true"); } catch (err2) { return toast(err2.message, true); }
  }
  toast(`deleted ${what}`);
  await loadConfig().catch(showError);
}

// ---------------------------------------------------------------- forms

const protocols = ["TCP", "UDP", "ICMP", "ANY"];
const methods = ["ROUND_ROBIN", "WEIGHTED_ROUND_ROBIN", "LEAST_CONNECTIONS", "WEIGHTED_LEAST_CONNECTIONS",
  "RANDOM", "LEAST_BYTES", "SOURCE_IP", "CONSISTENT_HASH", "ADAPTIVE"];

// Each form is a list of fields: [name, label, kind, options]. kind is
// text, number, bool or select (options: values, or a function of the
// state returning [value, label] pairs). Fields marked "create" are only
// asked at creation (the id, a member's pool).
function schema(kind) {
  const vipChoices = () => [["", "(none)"], ...state.vips.map((v) => [v.id, `${v.name || v.id} ${v.address}:${v.port}`])];
  const poolChoices = () => state.pools.map((p) => [p.id, p.name || p.id]);
  switch (kind) {
    case "vip": return [
      ["id", "id (optional)", "text", null, "create"], ["name", "name", "text"],
      ["address", "address", "text", null, null, "10.0.0.100"], ["protocol", "protocol", "select", protocols],
      ["port", "port", "number", null, null, "80"], ["connection_limit", "connection limit (-1: none)", "number"],
      ["admin_state_up", "enabled", "bool"],
    ];
    case "pool": return [
      ["id", "id (optional)", "text", null, "create"], ["name", "name", "text"],
      ["vip_id", "VIP", "select", vipChoices], ["lb_method", "method", "select", methods],
      ["dispatch", "dispatch", "select", [["", "(default for the method)"], "SWITCH", "CONTROLLER"]],
      ["forwarding", "forwarding", "select", ["NAT", "DSR"]], ["protocol", "protocol", "select", protocols],
      ["admin_state_up", "enabled", "bool"],
    ];
    case "member": return [
      ["id", "id (optional)", "text", null, "create"], ["pool_id", "pool", "select", poolChoices, "create"],
      ["address", "address", "text", null, null, "10.0.0.1"], ["port", "port (0: the VIP's)", "number", null, null, "80"],
      ["weight", "weight (0–256)", "number"], ["admin_state_up", "enabled (off: drained)", "bool"],
    ];
    case "monitor": return [
      ["id", "id (optional)", "text", null, "create"], ["name", "name", "text"],
      ["type", "type", "select", ["HTTP", "HTTPS", "TCP", "PING"]],
      ["delay", "every (s)", "number", null, null, "5"], ["timeout", "timeout (s)", "number", null, null, "2"],
      ["max_retries", "DOWN after failures", "number"], ["rise", "UP after passes", "number"],
      ["http_method", "HTTP method", "text", null, null, "GET"], ["url_path", "path", "text", null, null, "/"],
      ["expected_codes", "expected codes", "text", null, null, "200"], ["admin_state_up", "enabled", "bool"],
    ];
  }
  return [];
}

const defaults = {
  vip: { protocol: "TCP", admin_state_up: true },
  pool: { lb_method: "ROUND_ROBIN", forwarding: "NAT", protocol: "TCP", admin_state_up: true },
  member: { weight: 1, admin_state_up: true },
  monitor: { type: "HTTP", delay: 5, timeout: 2, max_retries: 3, rise: 2, http_method: "GET", url_path: "/",
    expected_codes: "200", admin_state_up: true },
};

let current = null; // { kind, obj, fields }

function openForm(kind, obj, preset) {
  const editing = !!obj;
  const values = Object.assign({}, defaults[kind], preset || {}, obj || {});
  const box = document.getElementById("form-fields");
  box.replaceChildren();
  const fields = schema(kind).filter((f) => !(editing && f[4] === "create"));
  for (const [name, label, type, options, , placeholder] of fields) {
    let input;
    if (type === "select") {
      const opts = typeof options === "function" ? options() : options;
      input = el("select", { name }, ...opts.map((o) => Array.isArray(o)
        ? el("option", { value: o[0] }, o[1]) : el("option", { value: o }, o)));
      input.value = values[name] ?? "";
    } else if (type === "bool") {
      input = el("input", { name, type: "checkbox" });
      input.checked = !!values[name];
    } else {
      input = el("input", { name, type: type === "number" ? "number" : "text", step: type === "number" ? "any" : undefined,
        placeholder, autocomplete: "off" });
      input.value = values[name] ?? "";
    }
    box.append(el("div", { class: "field", "data-field": name },
      el("label", {}, el("span", {}, label), input), el("small", { class: "err", hidden: true })));
  }
  document.getElementById("form-title").textContent = `${editing ? "Edit" : "New"} ${kind}` +
    (editing ? ` ${obj.name || obj.id}` : "");
  document.getElementById("form-error").hidden = true;
  current = { kind, obj, fields };
  document.getElementById("form-dialog").showModal();
  const first = box.querySelector("input, select");
  if (first) first.focus();
}

// formBody reads the form: at creation every non-empty field, when editing
// only the fields that changed (sent as a merge patch).
function formBody() {
  const { obj, fields } = current;
  const body = {};
  for (const [name, , type] of fields) {
    const input = document.querySelector(`#form-fields [name="${name}"]`);
    let v;
    if (type === "bool") v = input.checked;
    else if (type === "number") {
      if (input.value.trim() === "") continue;
      v = Number(input.value);
    } else {
      v = input.value.trim();
      if (v === "" && !obj) continue;
      if (v === "" && name === "vip_id") v = null;
    }
    if (obj && (obj[name] ?? null) === v) continue;
    if (obj && name === "vip_id" && v === null && !obj.vip_id) continue;
    body[name] = v;
  }
  return body;
}

function showFieldErrors(err) {
  document.querySelectorAll("#form-fields .err").forEach((e) => { e.hidden = true; e.textContent = ""; });
  document.querySelectorAll("#form-fields .field").forEach((e) => e.classList.remove("invalid"));
  const general = document.getElementById("form-error");
  general.hidden = true;
  if (!err) return;
  const field = err.field && document.querySelector(`#form-fields .field[data-field="${CSS.escape(err.field)}"]`);
  if (field) {
    const small = field.querySelector(".err");
    small.textContent = err.message;
    small.hidden = false;
    field.classList.add("invalid");
    field.querySelector("input, select").focus();
  } else {
    general.textContent = err.message;
    general.hidden = false;
  }
}

async function submitForm(e) {
  e.preventDefault();
  const { kind, obj } = current;
  const body = formBody();
  const submit = document.getElementById("form-submit");
  submit.disabled = true;
  try {
    if (obj) {
      if (Object.keys(body).length) await api("PATCH", `${paths[kind]}/${encodeURIComponent(obj.id)}`, body);
    } else {
      await api("POST", paths[kind], body);
    }
    showFieldErrors(null);
    document.getElementById("form-dialog").close();
    toast(`${obj ? "saved" : "created"} ${kind} ${body.name || body.id || (obj && (obj.name || obj.id)) || ""}`);
    await loadConfig().catch(showError);
  } catch (err) {
    showFieldErrors(err);
  } finally {
    submit.disabled = false;
  }
}

// ---------------------------------------------------------------- token

let tokenWaiters = null;

// askToken shows the token prompt and resolves true once a token is given,
// false when cancelled. Concurrent callers share one prompt.
function askToken(why) {
  if (tokenWaiters) return new Promise((r) => tokenWaiters.push(r));
  tokenWaiters = [];
  return new Promise((resolve) => {
    tokenWaiters.push(resolve);
    document.getElementById("token-why").textContent = why;
    const input = document.getElementById("token");
    input.value = token;
    document.getElementById("token-dialog").showModal();
    input.focus();
  });
}

function tokenDone(ok) {
  const waiters = tokenWaiters || [];
  tokenWaiters = null;
  document.getElementById("token-dialog").close();
  waiters.forEach((r) => r(ok));
}

// ---------------------------------------------------------------- live

function setFeed(text, cls) {
  const e = document.getElementById("feed");
  e.textContent = text;
  e.className = "pill " + cls;
}

// follow reads the Server-Sent Events of /v1/events with fetch, which, unlike
// EventSource, can send the bearer token. Bursts of events cause one reload.
async function follow() {
  for (;;) {
    try {
      const resp = await fetch("/v1/events", { headers: headers() });
      if (resp.status === 401) {
        setFeed("token needed", "lost");
        await askToken("This sdnlb needs a token to read (--auth-reads).");
        continue;
      }
      if (!resp.ok) throw new Error(resp.status);
      setFeed("live", "live");
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let pending = null;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        if (value.includes("data:") && !pending) {
          pending = setTimeout(() => { pending = null; loadConfig().catch(showError); }, 200);
        }
      }
    } catch (err) {
      showError(err);
    }
    setFeed("reconnecting…", "lost");
    await new Promise((r) => setTimeout(r, 2000));
  }
}

function showError(err) {
  setFeed(String(err.message || err), "lost");
}

document.getElementById("form").addEventListener("submit", submitForm);
document.getElementById("form-cancel").addEventListener("click", () => document.getElementById("form-dialog").close());
document.getElementById("token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  token = document.getElementById("token").value.trim();
  sessionStorage.setItem("sdnlb-token", token);
  tokenDone(true);
  loadConfig().catch(showError);
});
document.getElementById("token-cancel").addEventListener("click", () => tokenDone(false));
document.getElementById("token-dialog").addEventListener("cancel", () => tokenDone(false));
document.getElementById("token-btn").addEventListener("click", () => askToken("The token sent with every request."));
document.querySelectorAll("[data-new]").forEach((b) => b.addEventListener("click", () => openForm(b.dataset.new)));

loadConfig().catch(showError);
setInterval(() => {
  if (!tokenWaiters && !document.getElementById("form-dialog").open) loadStats().catch(showError);
}, 1000);
follow();
