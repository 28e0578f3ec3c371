// The sdnlb dashboard: VIPs with their pools' members, health and traffic.
// The configuration is reloaded when the change feed says something changed;
// traffic counters are polled every second.
"use strict";

const state = { vips: [], pools: new Map(), members: new Map(), stats: new Map() };
let token = sessionStorage.getItem("sdnlb-token") || "";

function headers() {
  return token ? { Authorization: "Bearer " + token } : {};
}

async function getJSON(path) {
  const resp = await fetch(path, { headers: headers() });
  if (!resp.ok) throw new Error(`${path}: ${resp.status}`);
  return resp.json();
}

// listAll follows the API's keyset pagination to the end.
async function listAll(path, key) {
  const items = [];
  let after = "";
  do {
    const sep = path.includes("?") ? "&" : "?";
    const page = await getJSON(`${path}${sep}limit=1000&after=${encodeURIComponent(after)}`);
    items.push(...page[key]);
    after = page.next;
  } while (after);
  return items;
}

async function loadConfig() {
  const [vips, pools, members] = await Promise.all([
    listAll("/v1/vips", "vips"), listAll("/v1/pools", "pools"), listAll("/v1/members", "members"),
  ]);
  state.vips = vips;
  state.pools = new Map(pools.map((p) => [p.id, p]));
  state.members = new Map();
  for (const m of members) {
    if (!state.members.has(m.pool_id)) state.members.set(m.pool_id, []);
    state.members.get(m.pool_id).push(m);
  }
  await loadStats();
}

async function loadStats() {
  const results = await Promise.allSettled(
    [...state.pools.keys()].map((id) => getJSON(`/v1/pools/${encodeURIComponent(id)}/stats`).then((s) => [id, s])),
  );
  state.stats = new Map(results.filter((r) => r.status === "fulfilled").map((r) => r.value));
  try {
    const sw = await getJSON("/v1/switches");
    document.getElementById("switches").textContent =
      `${sw.switches.length} switch${sw.switches.length === 1 ? "" : "es"} connected`;
  } catch {
    document.getElementById("switches").textContent = "";
  }
  render();
}

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

// cells appends a cell per [text, class]; a "pill" class wraps the text in
// a badge instead of colouring the whole cell.
function cells(tr, values) {
  for (const [text, cls] of values) {
    const td = tr.insertCell();
    if (cls && cls.startsWith("pill")) {
      const span = td.appendChild(document.createElement("span"));
      span.textContent = text;
      span.className = cls;
    } else {
      td.textContent = text;
      if (cls) td.className = cls;
    }
  }
}

function render() {
  const main = document.getElementById("vips");
  const tpl = document.getElementById("vip-tpl");
  main.replaceChildren();
  if (state.vips.length === 0) {
    main.innerHTML = '<p class="muted">No VIP yet: create one with the API (see <a href="/swagger/">Swagger UI</a>).</p>';
    return;
  }
  for (const vip of state.vips) {
    const el = tpl.content.cloneNode(true);
    el.querySelector(".name").textContent = vip.name || vip.id;
    el.querySelector(".addr").textContent =
      `${vip.protocol} ${vip.address}${vip.protocol === "ICMP" ? "" : ":" + vip.port}`;
    const status = el.querySelector(".status");
    status.textContent = vip.status;
    status.classList.add(vip.status);
    const pool = state.pools.get(vip.pool_id);
    const stats = pool && state.stats.get(pool.id);
    el.querySelector(".meta").textContent = pool
      ? `pool ${pool.name || pool.id} · ${pool.lb_method} · ${pool.dispatch} dispatch · ${pool.forwarding}` +
        ` · ${pool.monitor_ids.length} monitor(s) · MAC ${vip.mac}` +
        (stats ? ` · ${fmt.format(stats.refused_connections)} refused` : "")
      : `no pool · MAC ${vip.mac}`;
    const body = el.querySelector("tbody");
    const perMember = new Map((stats ? stats.members : []).map((m) => [m.member_id, m]));
    for (const m of (pool && state.members.get(pool.id)) || []) {
      const s = perMember.get(m.id) || {};
      const tr = body.insertRow();
      const check = m.health.last_check
        ? `${m.health.last_latency_ms.toFixed(1)} ms${m.health.last_error ? " · " + m.health.last_error : ""}`
        : "";
      cells(tr, [
        [`${m.address}:${m.port || vip.port}`], [String(m.weight)], [m.status, "pill " + m.status],
        [ago(m.health.since)], [check],
        [fmt.format(s.active_connections || 0), "n"], [fmt.format(s.total_connections || 0), "n"],
        [fmt.format(s.packets_in || 0), "n"], [fmt.format(s.packets_out || 0), "n"],
        [bytes(s.bytes_in || 0), "n"], [bytes(s.bytes_out || 0), "n"],
      ]);
    }
    if (stats) {
      cells(el.querySelector("tfoot").insertRow(), [
        ["pool total"], [""], [""], [""], [""],
        [fmt.format(stats.active_connections), "n"], [fmt.format(stats.total_connections), "n"],
        [fmt.format(stats.packets_in), "n"], [fmt.format(stats.packets_out), "n"],
        [bytes(stats.bytes_in), "n"], [bytes(stats.bytes_out), "n"],
      ]);
    }
    main.appendChild(el);
  }
}

function setFeed(text, cls) {
  const el = document.getElementById("feed");
  el.textContent = text;
  el.className = "pill " + cls;
}

// follow reads the Server-Sent Events of /v1/events with fetch, which, unlike
// EventSource, can send the bearer token. Bursts of events cause one reload.
async function follow() {
  for (;;) {
    try {
      const resp = await fetch("/v1/events", { headers: headers() });
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

document.getElementById("auth").addEventListener("submit", (e) => {
  e.preventDefault();
  token = document.getElementById("token").value;
  sessionStorage.setItem("sdnlb-token", token);
  loadConfig().catch(showError);
});

loadConfig().catch(showError);
setInterval(() => loadStats().catch(showError), 1000);
follow();
