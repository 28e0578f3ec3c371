// The sdnlb dashboard: the cluster, VIPs with their pools' members, health
// and traffic charts, pools without a VIP, and monitors; forms to create,
// edit and delete each, to drain and re-weight members and to attach
// monitors to pools.
//
// Data flow: the configuration comes from the /v1 lists and is read again
// when /v1/events says something changed; counters come from the stats
// watch stream (/v1/stats?watch=true) into series.js's tracks; the cluster,
// the BGP sessions, the switches and the topology (topology.js) are polled
// every 2 s. The page is built once per object
// and patched: a stats event touches only its pool's figures, a member list
// is built when it is opened, and charts are drawn only while on screen.
"use strict";

const state = {
  loaded: false, // the configuration was read once
  vips: [], pools: [], members: new Map(), monitors: [],
  stats: new Map(), // pool id → its latest stats from the stream
  switches: null, // null: unknown (not readable)
  cluster: null, clusterError: "",
  bgp: null, bgpError: "",
  topology: null, topologyError: "",
};
// One Track per pool and per member id (series.js), and per pool a short
// one of each node's share while more than one node counts.
const tracks = { pools: new Map(), members: new Map(), nodes: new Map() };
// The server's clock minus this browser's, from the stats samples: charts
// and "ago" are on the server's time, as the samples and transitions are.
let clockOffset = 0;
const serverNow = () => Date.now() + clockOffset;
// The stats stream connection that is up (a new number on each connect),
// 0 while it is down.
let statsEpoch = 0;
// Member lists start open while the configuration has at most this many
// members; beyond, a pool's list opens with its toggle or the filter.
const LIST_MEMBERS = 100;

// What the page measures of itself (ms, performance.now()); the e2e tests
// read it. Each list keeps the last 256 figures.
const perf = {
  firstRender: null, // the configuration first rendered and painted
  allStats: null, // every pool first showing counters
  statsMs: [], // applying one stats event: tracks and the pool's figures
  drawMs: [], // one round of drawing the charts on screen
  renderMs: [], // rendering the configuration after a load
  statsEvents: 0,
};
window.sdnlbPerf = perf;
function measure(list, since) {
  list.push(performance.now() - since);
  if (list.length > 256) list.shift();
}
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
// Members sort by address as numbers, IPv4 before IPv6, then port, then
// id. Addresses come canonical from the API: IPv6 compressed, lower case.
function addrKey(a) {
  if (!a.includes(":")) return "4 " + a.split(".").map((x) => x.padStart(3, "0")).join(".");
  const [head, tail] = a.split("::").map((s) => (s ? s.split(":") : []));
  const groups = tail ? [...head, ...Array(8 - head.length - tail.length).fill("0"), ...tail] : head;
  return "6 " + groups.map((g) => g.padStart(4, "0")).join(":");
}
// hostPort writes an address with a port, an IPv6 one in brackets.
const hostPort = (address, port) => (address.includes(":") ? `[${address}]:${port}` : `${address}:${port}`);
const byAddr = (a, b) => addrKey(a.address).localeCompare(addrKey(b.address)) || a.port - b.port || a.id.localeCompare(b.id);

async function loadConfig() {
  const [vips, pools, members, monitors] = await Promise.all([
    listAll("/v1/vips", "vips"), listAll("/v1/pools", "pools"),
    listAll("/v1/members", "members"), listAll("/v1/monitors", "monitors"),
  ]);
  state.vips = vips.sort(byName);
  state.monitors = monitors.sort(byName);
  state.members = new Map();
  for (const m of members.sort(byAddr)) {
    if (!state.members.has(m.pool_id)) state.members.set(m.pool_id, []);
    state.members.get(m.pool_id).push(m);
  }
  const gone = new Set(state.pools.map((p) => p.id));
  for (const p of pools) gone.delete(p.id);
  for (const id of gone) dropPool(id);
  state.pools = pools.sort(byName);
  state.loaded = true;
  render();
}

// dropPool forgets a deleted pool's stats and tracks. (The stats stream
// says nothing of pools it no longer has; members that leave a pool
// leave its stats, see applyStats.)
function dropPool(id) {
  const ps = state.stats.get(id);
  for (const m of ps ? ps.members : []) tracks.members.delete(m.member_id);
  state.stats.delete(id);
  tracks.pools.delete(id);
  tracks.nodes.delete(id);
}

// forget drops the entries of map whose key is not in keep.
function forget(map, keep) {
  for (const k of map.keys()) if (!keep.has(k)) map.delete(k);
}

// pollStatus reads the switches, the cluster, the BGP sessions and the
// topology.
async function pollStatus() {
  const [sw, cl, bgp, top] = await Promise.allSettled([api("GET", "/v1/switches"), api("GET", "/v1/cluster"),
    api("GET", "/v1/bgp"), api("GET", "/v1/topology")]);
  const noSwitch = noSwitchConnected();
  state.switches = sw.status === "fulfilled" ? sw.value.switches : null;
  state.cluster = cl.status === "fulfilled" ? cl.value : null;
  state.clusterError = cl.status === "fulfilled" ? "" : cl.reason.message;
  state.bgp = bgp.status === "fulfilled" ? bgp.value : null;
  state.bgpError = bgp.status === "fulfilled" ? "" : bgp.reason.message;
  state.topology = top.status === "fulfilled" ? top.value : null;
  state.topologyError = top.status === "fulfilled" ? "" : top.reason.message;
  renderSwitches();
  renderCluster();
  renderBGP();
  renderTopology();
  if (noSwitch !== noSwitchConnected() && state.loaded) render();
}

// ---------------------------------------------------------------- rendering

const fmt = new Intl.NumberFormat();
function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${i ? n.toFixed(1) : Math.round(n)} ${units[i]}`;
}
const rate = (v) => (v < 10 ? String(+v.toFixed(2)) : fmt.format(Math.round(v)));
const byteRate = (v) => bytes(v) + "/s";
function ago(t) {
  if (!t || t.startsWith("0001-")) return "";
  const s = Math.max(0, Math.round((serverNow() - Date.parse(t)) / 1000));
  return s < 90 ? `${s}s ago` : s < 5400 ? `${Math.round(s / 60)}m ago` : `${Math.round(s / 3600)}h ago`;
}
// recorded shows when a node last recorded a part of the cluster's state,
// as an age with the time on hover; "—" for never (null).
function recorded(t, what) {
  return t ? el("span", { title: `${what} recorded at ${t}` }, ago(t))
    : el("span", { class: "muted", title: `no ${what} recorded` }, "—");
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

// setText changes an element's text only when it differs, so that a stats
// event that changes nothing costs no layout.
function setText(e, text) {
  if (e.textContent !== text) e.textContent = text;
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

const noSwitchConnected = () => state.switches !== null && state.switches.length === 0;

// vipStatus is the VIP's status as the store derives it, corrected for what
// the store cannot know: with no switch connected nothing is balanced.
function vipStatus(vip) {
  if (vip.status === "ACTIVE" && noSwitchConnected()) {
    return pill("NO SWITCH", "DOWN", "ACTIVE in the configuration, but no switch is connected: nothing carries its traffic");
  }
  return pill(vip.status);
}

// render brings the page to the configuration in state. Objects whose
// configuration did not change keep their elements.
let renderPending = false;
function render() {
  // Re-rendering would take the focus and the typed value from a field:
  // wait until it loses the focus.
  const focus = document.activeElement;
  if (focus && document.querySelector("main").contains(focus) && /INPUT|SELECT/.test(focus.tagName)) {
    renderPending = true;
    return;
  }
  renderPending = false;
  const t0 = performance.now();
  renderSwitches();
  renderVIPs();
  renderOrphans();
  dropPoolViews();
  renderMonitors();
  applyFilter();
  measure(perf.renderMs, t0);
  noteAllStats();
  if (perf.firstRender === null) {
    perf.firstRender = 0;
    requestAnimationFrame(() => setTimeout(() => { perf.firstRender = performance.now(); }));
  }
}

function renderSwitches() {
  const sw = document.getElementById("switches");
  if (state.switches === null) {
    sw.textContent = ""; sw.className = "";
  } else if (state.switches.length === 0) {
    sw.textContent = "no switch connected"; sw.className = "pill DOWN";
    sw.title = "Point a switch at sdnlb's OpenFlow port: until then no VIP carries traffic";
  } else {
    const n = state.switches.length;
    sw.textContent = `${n} switch${n === 1 ? "" : "es"} connected`; sw.className = "pill UP";
    sw.title = state.switches.map((s) => `${s.dpid} ${s.address}, OpenFlow ${s.openflow}` +
      `${s.select_groups ? "" : ", no select groups"}${s.master ? `, MASTER ${s.master}` : ""}`).join("\n");
  }
}

// renderCluster shows the nodes sharing the database, which one leads, how
// many switches each is the OpenFlow MASTER of, and when each last
// recorded its parts of the cluster's stats and topology.
function renderCluster() {
  const sec = document.getElementById("cluster");
  const c = state.cluster;
  const head = el("h2", { class: "section" }, "Cluster ");
  if (!c) {
    head.append(pill("unknown", "DOWN", state.clusterError));
    sec.replaceChildren(head, el("p", { class: "muted" }, `GET /v1/cluster: ${state.clusterError || "no answer yet"}`));
    return;
  }
  head.append(c.leader
    ? pill(`leader ${c.leader}`, "UP", "holds the lease: runs the health monitors and assigns each switch its OpenFlow MASTER")
    : pill("no leader", "DOWN", "no node holds the lease: no health monitor runs and no switch gets a new MASTER"));
  const table = el("table", { class: "nodes" }, el("thead", {}, el("tr", {},
    ...["node", "role", "API", "OpenFlow", "MASTER of", "last seen", "stats recorded", "topology recorded"]
      .map((h) => el("th", {}, h)))));
  const body = table.createTBody();
  for (const n of c.nodes) {
    const tr = body.insertRow();
    tr.dataset.id = n.id;
    const id = n.id === c.self ? el("span", { title: "the node this dashboard talks to" }, n.id, " (this node)") : n.id;
    const masters = n.masters || [];
    const mastered = el("span", { title: masters.join("\n") }, `${masters.length} switch${masters.length === 1 ? "" : "es"}`);
    [id, pill(n.role, n.role === "leader" ? "UP" : "NO_MONITOR"), n.api_addr, n.openflow_addr, mastered, ago(n.last_seen),
      recorded(n.stats_recorded_at, "stats"), recorded(n.topology_recorded_at, "topology")]
      .forEach((v) => tr.insertCell().append(v));
  }
  if (c.nodes.length === 0) {
    const td = body.insertRow().insertCell();
    td.colSpan = 8;
    td.className = "muted";
    td.textContent = "no node seen in the last 10 s";
  }
  sec.replaceChildren(head, table);
}

// renderBGP shows what this node announces over BGP: a session per
// router, and the VIPs' routes by prefix with their edges' next hops. The
// panel is hidden on a node that speaks no BGP.
function renderBGP() {
  const sec = document.getElementById("bgp");
  const b = state.bgp;
  sec.hidden = !!b && !b.enabled;
  const head = el("h2", { class: "section" }, "BGP ");
  if (!b) {
    head.append(pill("unknown", "DOWN", state.bgpError));
    sec.replaceChildren(head, el("p", { class: "muted" }, `GET /v1/bgp: ${state.bgpError || "no answer yet"}`));
    return;
  }
  if (!b.enabled) return;
  const up = b.peers.filter((p) => p.state === "ESTABLISHED").length;
  head.append(b.holding
    ? pill("holding", "DRAINING", "started with graceful restart: the sessions open once the node knows who serves each edge (at most 30 s)")
    : pill(`${up} of ${b.peers.length} up`, up === b.peers.length ? "UP" : "DOWN", "sessions established"));
  const about = el("p", { class: "muted" }, `AS ${b.asn}, router id ${b.router_id}, graceful restart `,
    b.graceful_restart ? `${b.graceful_restart} s` : "off");
  const table = el("table", { class: "nodes" }, el("thead", {}, el("tr", {},
    ...["router", "AS", "session", "up since", "received", "advertised", "paths per prefix", "graceful restart"].map((h) => el("th", {}, h)))));
  const body = table.createTBody();
  for (const p of b.peers) {
    const tr = body.insertRow();
    tr.dataset.peer = p.address;
    [hostPort(p.address, p.port), String(p.asn), pill(p.state, p.state === "ESTABLISHED" ? "UP" : "DOWN"), p.since ? ago(p.since) : "",
      fmt.format(p.received), fmt.format(p.advertised), p.add_paths ? "every edge's" : "one", p.graceful_restart ? "yes" : "no"]
      .forEach((v) => tr.insertCell().append(v));
  }
  const byPrefix = new Map();
  for (const r of b.routes) byPrefix.set(r.prefix, [...(byPrefix.get(r.prefix) || []), r]);
  const routes = el("ul", { class: "routes" });
  for (const [prefix, rs] of byPrefix) {
    routes.append(el("li", {}, el("code", {}, prefix), " via ",
      ...rs.flatMap((r, i) => [i ? ", " : "", el("span", { title: `edge switch ${r.dpid}` }, r.next_hop)])));
  }
  const summary = el("p", {}, byPrefix.size
    ? `${byPrefix.size} VIP address${byPrefix.size === 1 ? "" : "es"} announced, ${b.routes.length} path${b.routes.length === 1 ? "" : "s"}:`
    : "no route announced: no VIP with a member in rotation and announce on, or no edge this node serves");
  sec.replaceChildren(head, about, table, summary, routes);
}

// renderTopology shows the switches, their links and the hosts at the
// edge; a link that is gone from GET /v1/topology is gone from the map.
function renderTopology() {
  const summary = document.getElementById("topology-summary");
  const map = document.getElementById("topology-map");
  const top = state.topology;
  if (!top) {
    summary.textContent = `GET /v1/topology: ${state.topologyError || "no answer yet"}`;
    map.toggleAttribute("hidden", true); // an SVG element has no hidden property
    return;
  }
  map.toggleAttribute("hidden", top.switches.length === 0);
  setText(summary, top.switches.length ? drawTopology(map, top) : "no switch connected");
}

// Views: the elements of each object, kept across renders.
const vipViews = new Map(); // VIP id → { card, sig, vip, noPool }
const poolViews = new Map(); // pool id → see poolView
const sections = {}; // per section: its heading and empty-state elements

// place makes parent's children exactly kids, moving only when the order
// differs.
function place(parent, kids) {
  const now = parent.children;
  if (now.length === kids.length && kids.every((k, i) => now[i] === k)) return;
  parent.replaceChildren(...kids);
}

// sectionParts gives a section's heading (applyFilter writes it) and, for
// a kind of object, what it says while there is none.
function sectionParts(id, kind) {
  if (!sections[id]) {
    sections[id] = {
      head: el("h2", { class: "section" }),
      empty: kind ? el("p", { class: "muted" }, `No ${kind.toUpperCase()} yet: `, button("create one", "", () => openForm(kind), "link"), ".") : null,
    };
  }
  return sections[id];
}

function renderVIPs() {
  const parts = sectionParts("vips", "vip");
  const poolByVIP = new Map(state.pools.filter((p) => p.vip_id).map((p) => [p.vip_id, p]));
  const noSwitch = noSwitchConnected();
  const kids = [parts.head];
  if (state.vips.length === 0) kids.push(parts.empty);
  const seen = new Set();
  for (const vip of state.vips) {
    seen.add(vip.id);
    let v = vipViews.get(vip.id);
    if (!v) {
      v = { card: document.getElementById("vip-tpl").content.firstElementChild.cloneNode(true), sig: "" };
      v.card.dataset.id = vip.id;
      vipViews.set(vip.id, v);
    }
    v.vip = vip;
    const sig = JSON.stringify(vip) + noSwitch;
    if (v.sig !== sig) {
      v.sig = sig;
      fillVIPHeader(v.card, vip);
      v.noPool = el("p", { class: "muted" }, "No pool serves this VIP: ",
        button("create one", "", () => openForm("pool", null, { vip_id: vip.id, protocol: vip.protocol }), "link"), ".");
    }
    const pool = poolByVIP.get(vip.id);
    place(v.card.querySelector(".pools"), [pool ? poolView(pool, vip).el : v.noPool]);
    kids.push(v.card);
  }
  forget(vipViews, seen);
  place(document.getElementById("vips"), kids);
}

function fillVIPHeader(card, vip) {
  card.querySelector(".name").textContent = vip.name || vip.id;
  card.querySelector(".addr").textContent =
    `${vip.protocol} ${vip.protocol === "ICMP" || vip.protocol === "ANY" ? vip.address : hostPort(vip.address, vip.port)}`;
  card.querySelector(".status").replaceChildren(vipStatus(vip));
  card.querySelector(".ids").replaceChildren(idChip(vip.id), el("span", { class: "muted" }, ` MAC ${vip.mac}`));
  card.querySelector(".tools").replaceChildren(
    button("edit", "edit the VIP", () => openForm("vip", vip)),
    button("delete", "delete the VIP", () => remove("vip", vip)),
  );
}

function renderOrphans() {
  const parts = sectionParts("orphans");
  const alone = state.pools.filter((p) => !p.vip_id);
  const kids = alone.length ? [parts.head] : [];
  for (const p of alone) {
    const v = poolView(p, null);
    if (!v.orphanCard) v.orphanCard = el("article", { class: "card" });
    place(v.orphanCard, [v.el]);
    kids.push(v.orphanCard);
  }
  place(document.getElementById("orphans"), kids);
}

// dropPoolViews forgets the views of deleted pools.
function dropPoolViews() {
  const keep = new Set(state.pools.map((p) => p.id));
  for (const [id, v] of poolViews) {
    if (!keep.has(id)) {
      for (const g of v.chartGroups()) chartsOff(g);
      poolViews.delete(id);
    }
  }
}

// Which pools' member lists the user opened or closed (pool id → bool).
const openPools = new Map();
// Members whose own charts are open.
const openMemberCharts = new Set();

// poolView returns the pool's view, brought up to date: the description
// line, the summary of its members and traffic, its charts, and the member
// table (rows built only while the list is open).
function poolView(pool, vip) {
  let v = poolViews.get(pool.id);
  if (!v) {
    const div = document.getElementById("pool-tpl").content.firstElementChild.cloneNode(true);
    div.dataset.id = pool.id;
    v = { el: div, id: pool.id, sig: "", rows: new Map(), filter: null,
      body: div.querySelector("table.members tbody"), table: div.querySelector("table.members"),
      toggle: div.querySelector(".toggle"), counts: div.querySelector(".counts"), totals: div.querySelector(".totals"),
      byNode: div.querySelector("table.by-node") };
    v.charts = poolCharts(v);
    v.chartGroups = () => [v.charts, ...[...v.rows.values()].filter((r) => r.charts).map((r) => r.charts)];
    v.toggle.addEventListener("click", () => {
      openPools.set(pool.id, !isOpen(v));
      renderMembers(v);
    });
    poolViews.set(pool.id, v);
    chartsOn(v.charts);
  }
  v.pool = pool;
  v.vip = vip;
  v.members = state.members.get(pool.id) || [];
  const sig = JSON.stringify([pool, vip && vip.port, state.monitors.map((m) => [m.id, m.name, m.type])]);
  if (v.sig !== sig) {
    v.sig = sig;
    fillPoolMeta(v.el, pool);
  }
  renderMembers(v);
  updatePool(v);
  return v;
}

function isOpen(v) {
  if (v.filter) return true;
  return openPools.has(v.id) ? openPools.get(v.id) : totalMembers() <= LIST_MEMBERS;
}
function totalMembers() {
  let n = 0;
  for (const list of state.members.values()) n += list.length;
  return n;
}

function fillPoolMeta(div, pool) {
  div.querySelector(".label").replaceChildren(el("strong", {}, `pool ${pool.name || pool.id}`),
    pool.admin_state_up ? "" : " ", pool.admin_state_up ? "" : pill("DISABLED"));
  div.querySelector(".ids").replaceChildren(idChip(pool.id));
  div.querySelector(".desc").textContent = ` ${pool.lb_method} · ${pool.dispatch} dispatch · ${pool.forwarding}`;
  const mons = div.querySelector(".monitors");
  mons.replaceChildren();
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
  div.querySelector(".tools").replaceChildren(
    button("+ member", "add a member", () => openForm("member", null, { pool_id: pool.id })),
    button("edit", "edit the pool", () => openForm("pool", pool)),
    button("delete", "delete the pool", () => remove("pool", pool)),
  );
}

// renderMembers shows the member rows the list should show (all, the
// filter's, or none while closed), building the missing ones and
// rebuilding those whose member changed.
function renderMembers(v) {
  const open = isOpen(v);
  setText(v.toggle, `${open ? "▾" : "▸"} members (${v.members.length})`);
  v.toggle.setAttribute("aria-expanded", open);
  v.table.hidden = !open;
  const kids = [];
  const shown = new Set();
  if (open) {
    for (const m of v.members) {
      if (v.filter && !v.filter.has(m.id)) continue;
      shown.add(m.id);
      let r = v.rows.get(m.id);
      const sig = JSON.stringify(m) + (v.vip ? v.vip.port : "") + v.pool.monitor_ids.length;
      if (!r || r.sig !== sig) {
        const fresh = memberRow(v, m);
        fresh.sig = sig;
        if (r) fresh.charts = r.charts;
        r = fresh;
        v.rows.set(m.id, r);
        const ms = memberStats(v.id, m.id);
        if (ms) updateRow(r, ms);
      }
      kids.push(r.tr);
      if (openMemberCharts.has(m.id)) {
        if (!r.charts) r.charts = memberCharts(v, m);
        chartsOn(r.charts);
        kids.push(r.charts.row);
      } else if (r.charts) {
        chartsOff(r.charts);
      }
    }
    if (v.members.length === 0) kids.push(v.empty || (v.empty = emptyRow()));
  }
  const current = new Set(v.members.map((m) => m.id));
  for (const [id, r] of v.rows) {
    if (shown.has(id)) continue;
    if (r.charts) chartsOff(r.charts);
    if (!current.has(id)) v.rows.delete(id);
  }
  place(v.body, kids);
}

function emptyRow() {
  const tr = el("tr");
  const td = tr.insertCell();
  td.colSpan = 13;
  td.className = "muted";
  td.textContent = "no member yet";
  return tr;
}

function memberStats(poolID, memberID) {
  const ps = state.stats.get(poolID);
  return ps && ps.members.find((m) => m.member_id === memberID);
}

// memberRow builds a member's row; updateRow fills in its live figures.
function memberRow(v, m) {
  const tr = el("tr");
  tr.dataset.id = m.id;
  const monitored = v.pool.monitor_ids.length > 0;
  // Check results are only shown while a monitor still checks the member;
  // a long error is cut to the column, whole on hover.
  const checkText = monitored && m.health.last_check
    ? `${m.health.last_latency_ms.toFixed(1)} ms${m.health.last_error ? " · " + m.health.last_error : ""}` : "";
  const check = el("span", { class: "check", title: checkText }, checkText);
  const weight = el("input", { type: "number", min: 0, max: 256, value: m.weight, class: "weight",
    title: "weight (0 drains); Enter to apply",
    onchange: (e) => { const w = Number(e.target.value); e.target.blur(); act(() => api("PATCH",
      `/v1/members/${encodeURIComponent(m.id)}`, { weight: w })); } });
  const r = { tr, cells: {}, weight: m.weight };
  const live = (name, text) => (r.cells[name] = el("span", {}, text));
  const where = el("span", { class: "where" });
  r.cells.where = where;
  const cells = [
    el("span", {}, hostPort(m.address, m.port || (v.vip ? v.vip.port : "VIP port")), where), idChip(m.id),
    el("span", {}, weight, live("effective", "")),
    live("status", pill(m.status)), live("since", ago(m.health.since)), check,
    live("active", "0"), live("total", "0"), live("packetsIn", "0"), live("packetsOut", "0"),
    live("bytesIn", "0 B"), live("bytesOut", "0 B"),
    el("span", { class: "tools" },
      button("chart", "show this member's traffic over the last 15 minutes", () => {
        if (openMemberCharts.has(m.id)) openMemberCharts.delete(m.id); else openMemberCharts.add(m.id);
        renderMembers(v);
      }),
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
  return r;
}

function updateRow(r, s) {
  const pillEl = r.cells.status.firstChild;
  if (pillEl.textContent !== s.status) {
    pillEl.textContent = s.status;
    pillEl.className = "pill " + s.status;
  }
  setText(r.cells.since, ago(s.status_since));
  // Where the switches showed the member; one no switch has shown takes
  // no connection until it answers the controller's ARP.
  setText(r.cells.where, s.location ? "" : "?");
  const where = s.location
    ? `seen at switch ${s.location.dpid}${s.location.port ? " port " + s.location.port : ""}`
    : "no switch has seen this member: it takes no connection; sdnlb asks for it by ARP";
  if (r.cells.where.parentNode.title !== where) r.cells.where.parentNode.title = where;
  // The weight in force, when ADAPTIVE or a slow start moved it from the
  // configured one, and what moved it.
  const moved = s.status !== "DOWN" && s.status !== "DRAINING" &&
    (Math.abs(s.effective_weight - r.weight) >= 0.01 || s.slow_start < 1);
  setText(r.cells.effective, !moved ? "" : ` → ${s.effective_weight}` +
    (s.slow_start < 1 ? ` (slow start ${Math.round(s.slow_start * 100)} %)` : ""));
  const why = [`weight in force ${s.effective_weight}`];
  if (s.available_cpu !== null) why.push(`CPU free ${Math.round(s.available_cpu * 100)} % (agent)`);
  if (s.available_sessions !== null) why.push(`sessions free ${Math.round(s.available_sessions * 100)} %`);
  if (s.slow_start < 1) why.push(`slow start ${Math.round(s.slow_start * 100)} % done`);
  const title = why.join(" · ");
  if (r.cells.effective.title !== title) r.cells.effective.title = title;
  setText(r.cells.active, fmt.format(s.active_connections));
  setText(r.cells.total, fmt.format(s.total_connections));
  const nodes = s.nodes || [];
  const byNode = nodes.length < 2 ? "" : "by node:\n" + nodes.map((n) =>
    `${n.node}: ${fmt.format(n.active_connections)} active, ${fmt.format(n.total_connections)} total`).join("\n");
  for (const cell of [r.cells.active, r.cells.total]) if (cell.title !== byNode) cell.title = byNode;
  setText(r.cells.packetsIn, fmt.format(s.packets_in));
  setText(r.cells.packetsOut, fmt.format(s.packets_out));
  setText(r.cells.bytesIn, bytes(s.bytes_in));
  setText(r.cells.bytesOut, bytes(s.bytes_out));
}

// updatePool shows the pool's live figures: members by status, totals and
// the latest rates, and the open rows.
function updatePool(v) {
  const ps = state.stats.get(v.id);
  if (!ps) {
    setText(v.counts, "");
    setText(v.totals, statsEpoch ? "" : "no counters yet");
    return;
  }
  const byStatus = new Map();
  for (const m of ps.members) byStatus.set(m.status, (byStatus.get(m.status) || 0) + 1);
  const fallback = ps.controller_dispatched_on || [];
  const countsKey = [...byStatus].map(([s, n]) => `${n} ${s}`).join(" ") + ` ${fallback.join(" ")}`;
  if (v.counts.dataset.key !== countsKey) {
    v.counts.dataset.key = countsKey;
    v.counts.replaceChildren(...[...byStatus].sort().map(([s, n]) => pill(`${n} ${s}`, s)),
      ...(fallback.length ? [pill(`controller dispatch on ${fallback.length} switch${fallback.length === 1 ? "" : "es"}`,
        "DRAINING", "These switches have no select groups (OpenFlow 1.0, or built without them): " +
        `the controller picks the member of each new connection there.\n${fallback.join("\n")}`)] : []));
  }
  const tr = tracks.pools.get(v.id);
  const s = tr ? tr.lastFull() : 0;
  const now = (k) => (tr && !Number.isNaN(tr.value(k, s)) ? tr.value(k, s) : null);
  const conns = now(CONNS), bin = now(BYTES_IN), bout = now(BYTES_OUT);
  setText(v.totals, `${fmt.format(ps.active_connections)} active · ` +
    `${conns === null ? "–" : rate(conns)} new/s · in ${bin === null ? "–" : byteRate(bin)} · ` +
    `out ${bout === null ? "–" : byteRate(bout)} · ${fmt.format(ps.total_connections)} total · ` +
    `${fmt.format(ps.refused_connections)} refused`);
  renderByNode(v, ps);
  if (!v.table.hidden) {
    for (const m of ps.members) {
      const r = v.rows.get(m.member_id);
      if (r) updateRow(r, m);
    }
    const foot = v.el.querySelector("table.members tfoot");
    const cells = ["pool total", "", "", "", "", "", fmt.format(ps.active_connections), fmt.format(ps.total_connections),
      fmt.format(ps.packets_in), fmt.format(ps.packets_out), bytes(ps.bytes_in), bytes(ps.bytes_out), ""];
    if (!foot.rows.length) {
      const row = foot.insertRow();
      cells.forEach((_, i) => { const td = row.insertCell(); if (i >= 6 && i <= 11) td.className = "n"; });
    }
    cells.forEach((t, i) => setText(foot.rows[0].cells[i], t));
  }
}

// renderByNode shows the pool's share of each node while more than one
// node counts: its active connections, its rates of now (from its short
// track) and its totals. A member's shares are on hover of its counts.
function renderByNode(v, ps) {
  const nodes = ps.nodes || [];
  const alone = nodes.length < 2;
  if (v.byNode.hidden !== alone) v.byNode.hidden = alone;
  if (alone) return;
  const body = v.byNode.tBodies[0];
  const self = state.cluster ? state.cluster.self : "";
  const key = JSON.stringify([nodes.map((n) => n.node), self]);
  if (v.byNode.dataset.key !== key) {
    v.byNode.dataset.key = key;
    body.replaceChildren(...nodes.map((n) => {
      const tr = el("tr", {}, el("td", {}, n.node, n.node === self ? " (this node)" : ""));
      tr.dataset.node = n.node;
      for (let i = 0; i < 7; i++) tr.insertCell().className = "n";
      return tr;
    }));
  }
  const shares = tracks.nodes.get(ps.pool_id);
  nodes.forEach((n, i) => {
    const tr = shares && shares.get(n.node);
    const s = tr ? tr.lastFull() : 0;
    const now = (k, format) => { const x = tr ? tr.value(k, s) : NaN; return Number.isNaN(x) ? "–" : format(x); };
    [fmt.format(n.active_connections), now(CONNS, rate), now(BYTES_IN, byteRate), now(BYTES_OUT, byteRate),
      fmt.format(n.total_connections), bytes(n.bytes_in), bytes(n.bytes_out)]
      .forEach((text, c) => setText(body.rows[i].cells[c + 1], text));
  });
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

// ---------------------------------------------------------------- filter

let filterText = "";

// applyFilter shows the VIPs and pools that match the filter box by id,
// name or address; when only some members match, their pool lists just
// those.
function applyFilter() {
  const q = filterText;
  const hit = (...fields) => fields.some((f) => f !== undefined && f !== null && String(f).toLowerCase().includes(q));
  const poolByVIP = new Map(state.pools.filter((p) => p.vip_id).map((p) => [p.vip_id, p]));
  // matchPool: true (the pool or its VIP matches), a Set of matching
  // member ids, or false.
  const matchPool = (pool, vipHit) => {
    if (!q || vipHit || (pool && hit(pool.id, pool.name))) return true;
    if (!pool) return false;
    const ids = new Set((state.members.get(pool.id) || [])
      .filter((m) => hit(m.id, m.address, hostPort(m.address, m.port))).map((m) => m.id));
    return ids.size ? ids : false;
  };
  const filterPool = (pool, match) => {
    const v = pool && poolViews.get(pool.id);
    if (!v) return;
    const filter = match instanceof Set ? match : null;
    if (filter !== v.filter) {
      v.filter = filter;
      renderMembers(v);
      updatePool(v);
    }
  };
  let shown = 0;
  for (const vip of state.vips) {
    const pool = poolByVIP.get(vip.id);
    const match = matchPool(pool, !q || hit(vip.id, vip.name, vip.address, hostPort(vip.address, vip.port)));
    const card = vipViews.get(vip.id).card;
    card.hidden = !match;
    if (match) shown++;
    filterPool(pool, match);
  }
  const vipHead = sections.vips.head;
  setText(vipHead, q ? `VIPs (${shown} of ${state.vips.length} match)` : `VIPs (${state.vips.length})`);
  let alone = 0, aloneShown = 0;
  for (const pool of state.pools.filter((p) => !p.vip_id)) {
    const match = matchPool(pool, false);
    const v = poolViews.get(pool.id);
    v.orphanCard.hidden = !match;
    alone++;
    if (match) aloneShown++;
    filterPool(pool, match);
  }
  setText(sections.orphans.head, q ? `Pools without a VIP (${aloneShown} of ${alone} match)` : `Pools without a VIP (${alone})`);
  for (const tr of document.querySelectorAll("#monitors tbody tr")) {
    const m = state.monitors.find((x) => x.id === tr.dataset.id);
    tr.hidden = !!q && !(m && hit(m.id, m.name, m.type));
  }
}

// ---------------------------------------------------------------- charts

// The chart groups on screen; each is drawn every second while there.
const onScreen = new Set();
const chartObserver = new IntersectionObserver((entries) => {
  for (const e of entries) {
    const g = e.target.chartGroup;
    if (e.isIntersecting) {
      onScreen.add(g);
      drawGroup(g);
    } else {
      onScreen.delete(g);
    }
  }
}, { rootMargin: "200px" });

function chartsOn(g) {
  if (g.observed) return;
  g.observed = true;
  chartObserver.observe(g.el);
}
function chartsOff(g) {
  if (!g.observed) return;
  g.observed = false;
  chartObserver.unobserve(g.el);
  onScreen.delete(g);
}

function seriesOf(track, k) {
  return track ? (s) => track.value(k, s) : () => NaN;
}

function poolCharts(v) {
  const boxes = { conns: newChart("conns", "new connections/s"), active: newChart("active", "active connections"),
    bytes: newChart("bytes", "bytes/s in and out") };
  const box = v.el.querySelector(".charts");
  box.append(boxes.conns, boxes.active, boxes.bytes);
  const g = { el: box, boxes, draw: () => {
    const ps = state.stats.get(v.id);
    const members = ps ? ps.members : [];
    const pt = tracks.pools.get(v.id);
    // A line per member while the palette has a colour for each, else
    // the pool's total.
    const perMember = (k) => (members.length > 1 && members.length <= PALETTE.length
      ? members.map((m, i) => ({ label: memberLabel(m, members), color: PALETTE[i], value: seriesOf(tracks.members.get(m.member_id), k) }))
      : [{ label: "pool", color: PALETTE[0], value: seriesOf(pt, k) }]);
    const marks = [];
    for (const m of members) {
      const t = tracks.members.get(m.member_id);
      if (t) for (const mk of t.marks) marks.push({ t: mk.t, status: mk.status, label: memberLabel(m, members), member: m.member_id });
    }
    return [
      [boxes.conns, perMember(CONNS), marks, rate],
      [boxes.active, perMember(ACTIVE), marks, rate],
      [boxes.bytes, bytesLines(pt), marks, byteRate],
    ];
  } };
  box.chartGroup = g;
  return g;
}

function memberLabel(m, members) {
  return members.some((o) => o !== m && o.address === m.address) ? hostPort(m.address, m.port) : m.address;
}

function bytesLines(track) {
  return [{ label: "in", color: PALETTE[0], value: seriesOf(track, BYTES_IN) },
    { label: "out", color: PALETTE[1], value: seriesOf(track, BYTES_OUT) }];
}

function memberCharts(v, m) {
  const boxes = { conns: newChart("conns", "new connections/s"), active: newChart("active", "active connections"),
    bytes: newChart("bytes", "bytes/s in and out") };
  const row = el("tr", { class: "member-charts" });
  row.dataset.member = m.id;
  const td = row.insertCell();
  td.colSpan = 13;
  const box = el("div", { class: "charts" }, boxes.conns, boxes.active, boxes.bytes);
  td.append(box);
  const g = { el: box, row, boxes, draw: () => {
    const t = tracks.members.get(m.id);
    const label = hostPort(m.address, m.port || (v.vip ? v.vip.port : ""));
    const marks = t ? t.marks.map((mk) => ({ t: mk.t, status: mk.status, member: m.id })) : [];
    return [
      [boxes.conns, [{ label, color: PALETTE[0], value: seriesOf(t, CONNS) }], marks, rate],
      [boxes.active, [{ label, color: PALETTE[0], value: seriesOf(t, ACTIVE) }], marks, rate],
      [boxes.bytes, bytesLines(t), marks, byteRate],
    ];
  } };
  box.chartGroup = g;
  return g;
}

// The seconds the charts show, of the WINDOW_S the tracks keep.
let chartSpan = TICKS[sessionStorage.getItem("sdnlb-span")] ? Number(sessionStorage.getItem("sdnlb-span")) : WINDOW_S;

function drawGroup(g) {
  const now = serverNow();
  for (const [box, lines, marks, format] of g.draw()) {
    setLegend(box, lines);
    drawChart(box.querySelector("svg"), { lines, marks, now, span: chartSpan, format });
  }
}

// Pools with news for their charts, drawn at the next frame.
const dirty = new Set();
let frame = 0;
function drawSoon(poolID) {
  dirty.add(poolID);
  if (!frame) frame = requestAnimationFrame(drawDirty);
}
function drawDirty() {
  frame = 0;
  const t0 = performance.now();
  let drawn = 0;
  for (const id of dirty) {
    const v = poolViews.get(id);
    if (!v) continue;
    for (const g of v.chartGroups()) {
      if (onScreen.has(g)) { drawGroup(g); drawn++; }
    }
  }
  dirty.clear();
  if (drawn) measure(perf.drawMs, t0);
}

// tick moves the charts on every second: the tracks settle (their counters
// did not move since the last event) and what is on screen is drawn again.
function tick() {
  const now = serverNow();
  for (const t of tracks.pools.values()) t.settle(now, statsEpoch);
  for (const t of tracks.members.values()) t.settle(now, statsEpoch);
  for (const shares of tracks.nodes.values()) for (const t of shares.values()) t.settle(now, statsEpoch);
  const t0 = performance.now();
  for (const g of onScreen) drawGroup(g);
  if (onScreen.size) measure(perf.drawMs, t0);
  for (const v of poolViews.values()) updatePool(v);
}

// ---------------------------------------------------------------- stats

const countersOf = (s) => ({ conns: s.total_connections, active: s.active_connections,
  bytesIn: s.bytes_in, bytesOut: s.bytes_out });

function trackOf(map, id) {
  let t = map.get(id);
  if (!t) map.set(id, (t = new Track()));
  return t;
}

// applyStats takes one pool's stats from the stream of connection epoch.
function applyStats(ps, epoch) {
  const t0 = performance.now();
  const t = Date.parse(ps.updated_at);
  clockOffset = t - Date.now();
  const before = state.stats.get(ps.pool_id);
  if (before) {
    const ids = new Set(ps.members.map((m) => m.member_id));
    for (const m of before.members) if (!ids.has(m.member_id)) tracks.members.delete(m.member_id);
  }
  state.stats.set(ps.pool_id, ps);
  // The pool moves by its members' steps; a member seen first adds none.
  const steps = { conns: 0, bytesIn: 0, bytesOut: 0 };
  for (const m of ps.members) {
    const mt = trackOf(tracks.members, m.member_id);
    mt.observe(m.status, Date.parse(m.status_since), t);
    const took = mt.sample(t, epoch, countersOf(m));
    for (const k in steps) if (took) steps[k] = steps[k] === null || took[k] === null ? null : steps[k] + took[k];
  }
  trackOf(tracks.pools, ps.pool_id).sample(t, epoch, countersOf(ps), steps);
  sampleShares(ps, t, epoch);
  const v = poolViews.get(ps.pool_id);
  if (v) {
    updatePool(v);
    drawSoon(ps.pool_id);
  }
  perf.statsEvents++;
  measure(perf.statsMs, t0);
  noteAllStats();
}

// sampleShares feeds the short tracks of the pool's share of each node,
// kept while more than one node counts (a node alone is the pool).
function sampleShares(ps, t, epoch) {
  const nodes = ps.nodes || [];
  if (nodes.length < 2) {
    tracks.nodes.delete(ps.pool_id);
    return;
  }
  let shares = tracks.nodes.get(ps.pool_id);
  if (!shares) tracks.nodes.set(ps.pool_id, (shares = new Map()));
  forget(shares, new Set(nodes.map((n) => n.node)));
  for (const n of nodes) {
    let tr = shares.get(n.node);
    if (!tr) shares.set(n.node, (tr = new Track(NOW_WINDOW_S)));
    tr.sample(t, epoch, countersOf(n));
  }
}

// noteAllStats notes when every pool first has counters, after the
// configuration or after the stats, whichever came last.
function noteAllStats() {
  if (perf.allStats === null && state.pools.length && state.pools.every((p) => state.stats.has(p.id))) {
    perf.allStats = performance.now();
  }
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
const kindNames = { vip: "VIP", pool: "pool", member: "member", monitor: "monitor" };

async function remove(kind, obj) {
  const what = `${kindNames[kind]} ${obj.name || obj.id}`;
  if (!confirm(`Delete ${what}?`)) return;
  const path = `${paths[kind]}/${encodeURIComponent(obj.id)}`;
  try {
    await api("DELETE", path);
  } catch (err) {
    if (err.code !== "conflict") return toast(err.message, true);
    if (!confirm(cascadeQuestion(kind, obj, what))) return;
    try { await api("DELETE", path + "?cascade=true"); } catch (err2) { return toast(err2.message, true); }
  }
  toast(`deleted ${what}`);
  await loadConfig().catch(showError);
}

// cascadeQuestion asks whether to delete obj with what depends on it,
// naming what goes: "Delete pool web, its 3 members and their stats?".
function cascadeQuestion(kind, obj, what) {
  const members = (poolID) => counted((state.members.get(poolID) || []).length, "member");
  switch (kind) {
    case "vip": {
      const pool = state.pools.find((p) => p.vip_id === obj.id);
      if (pool) return `Delete ${what}, its pool ${pool.name || pool.id}, its ${members(pool.id)} and their stats?`;
      break;
    }
    case "pool":
      return `Delete ${what}, its ${members(obj.id)} and their stats?`;
    case "monitor": {
      const pools = obj.pool_ids || [];
      if (pools.length) return `Delete ${what} and take it off ${pools.length === 1 ? "pool" : "pools"} ${listed(pools)}?`;
      break;
    }
  }
  return `Delete ${what} with what depends on it?`;
}

// counted is "1 member", "3 members"; plural when "s" will not do.
const counted = (n, noun, plural) => `${n} ${n === 1 ? noun : plural || noun + "s"}`;

// listed is "a", "a and b", "a, b and c".
const listed = (names) => names.length < 2 ? names.join("") : `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;

// ---------------------------------------------------------------- forms

const protocols = ["TCP", "UDP", "ICMP", "ANY"];
const methods = ["ROUND_ROBIN", "WEIGHTED_ROUND_ROBIN", "LEAST_CONNECTIONS", "WEIGHTED_LEAST_CONNECTIONS",
  "RANDOM", "LEAST_BYTES", "SOURCE_IP", "CONSISTENT_HASH", "ADAPTIVE"];

// Each form is a list of fields: [name, label, kind, options]. kind is
// text, number, bool or select (options: values, or a function of the
// state returning [value, label] pairs). Fields marked "create" are only
// asked at creation (the id, a member's pool).
function schema(kind) {
  const vipChoices = () => [["", "(none)"], ...state.vips.map((v) => [v.id, `${v.name || v.id} ${hostPort(v.address, v.port)}`])];
  const poolChoices = () => state.pools.map((p) => [p.id, p.name || p.id]);
  switch (kind) {
    case "vip": return [
      ["id", "id (optional)", "text", null, "create"], ["name", "name", "text"],
      ["address", "address (IPv4 or IPv6)", "text", null, null, "10.0.0.100"], ["protocol", "protocol", "select", protocols],
      ["port", "port", "number", null, null, "80"], ["connection_limit", "connection limit (-1: none)", "number"],
      ["admin_state_up", "enabled", "bool"], ["announce", "announced over BGP", "bool"],
    ];
    case "pool": return [
      ["id", "id (optional)", "text", null, "create"], ["name", "name", "text"],
      ["vip_id", "VIP", "select", vipChoices], ["lb_method", "method", "select", methods],
      ["dispatch", "dispatch", "select", [["", "(default for the method)"], "SWITCH", "CONTROLLER"]],
      ["forwarding", "forwarding", "select", ["NAT", "DSR"]], ["protocol", "protocol", "select", protocols],
      ["slow_start", "slow start (s; weighted methods)", "number", null, null, "0"],
      ["client_ipv6_prefix", "IPv6 client prefix (SOURCE_IP, CONSISTENT_HASH by CLIENT; 64: a host's /64)", "number", null, null, "128"],
      ["hash_key", "hash key (CONSISTENT_HASH)", "select", ["CONNECTION", "CLIENT"]],
      ["admin_state_up", "enabled", "bool"],
    ];
    case "member": return [
      ["id", "id (optional)", "text", null, "create"], ["pool_id", "pool", "select", poolChoices, "create"],
      ["address", "address (the VIP's family)", "text", null, null, "10.0.0.1"], ["port", "port (0: the VIP's)", "number", null, null, "80"],
      ["weight", "weight (0–256)", "number"], ["capacity", "capacity (connections; 0: none)", "number", null, null, "0"],
      ["admin_state_up", "enabled (off: drained)", "bool"],
    ];
    case "monitor": return [
      ["id", "id (optional)", "text", null, "create"], ["name", "name", "text"],
      ["type", "type", "select", ["HTTP", "HTTPS", "TCP", "PING", "AGENT"]],
      ["port", "agent port (AGENT)", "number", null, null, "5555"],
      ["delay", "every (s)", "number", null, null, "5"], ["timeout", "timeout (s)", "number", null, null, "2"],
      ["max_retries", "DOWN after failures", "number"], ["rise", "UP after passes", "number"],
      ["http_method", "HTTP method", "text", null, null, "GET"], ["url_path", "path", "text", null, null, "/"],
      ["expected_codes", "expected codes", "text", null, null, "200"], ["admin_state_up", "enabled", "bool"],
    ];
  }
  return [];
}

const defaults = {
  vip: { protocol: "TCP", admin_state_up: true, announce: true },
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

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function setPill(id, text, cls, title) {
  const e = document.getElementById(id);
  e.textContent = text;
  e.className = "pill " + cls;
  e.title = title || "";
}

function showError(err) {
  setPill("feed", String(err.message || err), "lost");
}

// readEvents reads a Server-Sent Events body and calls on({event, data})
// for each event that has data; comments (heartbeats) are skipped.
async function readEvents(resp, on) {
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let start = 0;
    for (let end; (end = buf.indexOf("\n\n", start)) >= 0; start = end + 2) {
      const ev = { event: "message", data: null };
      for (const line of buf.slice(start, end).split("\n")) {
        const i = line.indexOf(":");
        if (i === 0) continue;
        const field = i < 0 ? line : line.slice(0, i);
        const v = i < 0 ? "" : line.slice(line[i + 1] === " " ? i + 2 : i + 1);
        if (field === "data") ev.data = ev.data === null ? v : ev.data + "\n" + v;
        else if (field === "event") ev.event = v;
      }
      if (ev.data !== null) on(ev);
    }
    buf = buf.slice(start);
  }
}

// follow reads a Server-Sent Events stream with fetch, which, unlike
// EventSource, can send the bearer token, and opens it again 2 s after it
// ends or fails. opened is called with each connection's number once the
// stream is up, on with each event, lost with what went wrong.
async function follow(path, opened, on, lost) {
  for (let n = 1; ; n++) {
    try {
      const resp = await fetch(path, { headers: headers() });
      if (resp.status === 401) {
        lost("token needed");
        await askToken("This sdnlb needs a token to read (--auth-reads).");
        continue;
      }
      if (!resp.ok) throw new APIError(resp.status, await resp.json().catch(() => null));
      opened(n);
      await readEvents(resp, (ev) => on(ev, n));
      lost("reconnecting…");
    } catch (err) {
      lost(String(err.message || err));
    }
    await sleep(2000);
  }
}

// The change feed: bursts of events cause one reload, and so does a
// reconnect (events may have been missed meanwhile).
let reload = null;
function reloadSoon() {
  if (!reload) reload = setTimeout(() => { reload = null; loadConfig().catch(showError); }, 200);
}
function followConfig() {
  follow("/v1/events",
    (n) => { setPill("feed", "live", "live", "configuration follows /v1/events"); if (n > 1) reloadSoon(); },
    () => reloadSoon(),
    (why) => setPill("feed", why, "lost", "the change feed /v1/events is down: the configuration shown may be stale"));
}

// The counters: the stats watch stream. While it is down the charts get a
// gap, and a reconnect starts every series again from its first sample.
function followStats() {
  follow("/v1/stats?watch=true",
    (n) => { statsEpoch = n; setPill("stats-feed", "counters live", "live", "counters follow /v1/stats?watch=true"); },
    (ev, n) => {
      if (ev.event === "stats") applyStats(JSON.parse(ev.data), n);
      else if (ev.event === "error") setPill("stats-feed", JSON.parse(ev.data).error.message, "lost");
    },
    (why) => { statsEpoch = 0; setPill("stats-feed", `counters: ${why}`, "lost", "the stats stream is down: the charts show a gap"); });
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
document.querySelector("main").addEventListener("focusout", () => { if (renderPending) setTimeout(render); });
const spanSelect = document.getElementById("span");
spanSelect.value = String(chartSpan);
spanSelect.addEventListener("change", () => {
  chartSpan = Number(spanSelect.value);
  sessionStorage.setItem("sdnlb-span", chartSpan);
  for (const g of onScreen) drawGroup(g);
});
let filterTimer = 0;
document.getElementById("filter").addEventListener("input", (e) => {
  clearTimeout(filterTimer);
  filterTimer = setTimeout(() => {
    filterText = e.target.value.trim().toLowerCase();
    applyFilter();
  }, 100);
});

loadConfig().catch(showError);
followConfig();
followStats();
pollStatus().catch(showError);
setInterval(() => {
  if (!tokenWaiters) pollStatus().catch(showError);
}, 2000);
setInterval(tick, 1000);
