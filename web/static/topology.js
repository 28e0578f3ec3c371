// The topology view: the switches on an ellipse, one line per link (its
// two directions paired; each half coloured and sized by the utilisation of
// the direction that leaves from its end) and the hosts at the edge fanned
// out around their switch. Drawn as SVG text, as chart.js draws, with every
// name that came from the network escaped. Past TOPO_LABELS switches the
// labels give way to hover titles and the hosts to a count per switch, so
// that 64 switches stay readable. It uses esc (chart.js) and counted
// (app.js).
"use strict";

const TOPO_W = 1200, TOPO_H = 500;
const TOPO_LABELS = 16; // switches up to which switches, links and hosts are labelled
const TOPO_HOSTS = 8; // hosts of a switch drawn one by one; more show as a count
const HOST_DIST = 70; // from a switch to its hosts

// bitRate is bits per second in SI units: "0 b/s", "12.5 Mb/s".
function bitRate(v) {
  const units = ["b/s", "kb/s", "Mb/s", "Gb/s", "Tb/s"];
  let i = 0;
  while (v >= 1000 && i < units.length - 1) { v /= 1000; i++; }
  return `${i ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

const endKey = (e) => `${e.dpid}/${e.port}`;

// pairLinks pairs each link with its reverse: [{ a, b, ab, ba }], a and b
// the ends in a fixed order, ab the direction a→b and ba b→a (null while
// not discovered).
function pairLinks(links) {
  const pairs = new Map();
  for (const l of links) {
    const s = endKey(l.src), d = endKey(l.dst);
    const forward = s < d;
    const key = forward ? `${s} ${d}` : `${d} ${s}`;
    let p = pairs.get(key);
    if (!p) pairs.set(key, (p = forward ? { a: l.src, b: l.dst, ab: null, ba: null } : { a: l.dst, b: l.src, ab: null, ba: null }));
    if (forward) p.ab = l; else p.ba = l;
  }
  return [...pairs.values()];
}

// shortNames gives each datapath id its shortest tail of pairs that no
// other switch shares: "00:01" rather than "5d:b0:00:00:00:00:00:01".
function shortNames(dpids) {
  for (let pairs = 2; pairs < 8; pairs++) {
    const tails = dpids.map((d) => d.split(":").slice(-pairs).join(":"));
    if (new Set(tails).size === tails.length) return new Map(dpids.map((d, i) => [d, tails[i]]));
  }
  return new Map(dpids.map((d) => [d, d]));
}

// linkStroke is a direction's colour and width: grey while it carries
// nothing, then green to red with its utilisation.
function linkStroke(l) {
  const u = Math.min(1, Math.max(0, l.utilisation || 0));
  const colour = l.rate_bps ? `hsl(${Math.round(120 * (1 - u))} 70% 38%)` : "#8c959f";
  return `stroke="${colour}" stroke-width="${(2 + 6 * u).toFixed(1)}"`;
}

function directionText(l, names) {
  const cap = l.capacity_bps ? ` of ${bitRate(l.capacity_bps)} (${Math.round(100 * l.utilisation)} %)` : " (capacity unknown)";
  return `${names.get(l.src.dpid)} port ${l.src.port} → ${names.get(l.dst.dpid)} port ${l.dst.port}: ${bitRate(l.rate_bps)}${cap}`;
}

const pt = (p) => `${p.x.toFixed(1)} ${p.y.toFixed(1)}`;
const xy = (p, x = "x", y = "y") => `${x}="${p.x.toFixed(1)}" ${y}="${p.y.toFixed(1)}"`;
const mid = (p, q) => ({ x: (p.x + q.x) / 2, y: (p.y + q.y) / 2 });
const toward = (p, t, d) => ({ x: p.x + d * Math.cos(t), y: p.y + d * Math.sin(t) });

// topologySig is what the view draws: a new last_seen redraws nothing.
const topologySig = (top) => JSON.stringify(top, (k, v) => (k === "last_seen" ? undefined : v));

// omittedNote says what the bounded answer left out, "" when nothing.
function omittedNote(omitted) {
  const parts = Object.entries(omitted || {}).filter(([, n]) => n > 0).map(([what, n]) => `${n} ${what}`);
  return parts.length ? ` · not shown: ${parts.join(", ")}` : "";
}

// drawTopology draws top (GET /v1/topology) into svg unless it drew the
// same already, and returns a summary line.
function drawTopology(svg, top) {
  const switches = top.switches, pairs = pairLinks(top.links);
  const oneWay = pairs.filter((p) => !p.ab || !p.ba).length;
  const labelled = switches.length <= TOPO_LABELS;
  const summary = `${counted(switches.length, "switch", "switches")} · ${counted(pairs.length, "link")}` +
    (oneWay ? ` (${oneWay} one-way)` : "") + ` · ${counted(top.hosts.length, "host")}` +
    omittedNote(top.omitted) + (labelled ? "" : " · hover for names");
  const sig = topologySig(top);
  if (svg.topologySig === sig) return summary;
  svg.topologySig = sig;

  const names = shortNames(switches.map((s) => s.dpid));
  const hostsOf = new Map(switches.map((s) => [s.dpid, []]));
  for (const h of top.hosts) if (hostsOf.has(h.dpid)) hostsOf.get(h.dpid).push(h);

  // The switches on an ellipse from the left, clockwise; the margin leaves
  // room for the hosts and their labels.
  const n = switches.length;
  const rx = TOPO_W / 2 - (labelled ? 200 : 60), ry = TOPO_H / 2 - (labelled ? 100 : 50);
  const pos = new Map(switches.map((s, i) => {
    const t = Math.PI + 2 * Math.PI * i / n;
    return [s.dpid, n === 1 ? { x: TOPO_W / 2, y: TOPO_H / 2, t: null } :
      { x: TOPO_W / 2 + rx * Math.cos(t), y: TOPO_H / 2 + ry * Math.sin(t), t }];
  }));

  // The view box is as tall as what is drawn (the highest and lowest
  // points, with room for their labels), at least 120 high.
  let high = Infinity, low = -Infinity;
  const reach = (p, pad) => { high = Math.min(high, p.y - pad); low = Math.max(low, p.y + pad); };
  const parts = [];
  // Links first, under the nodes. Parallel links between two switches
  // bend apart; each is a quadratic curve split at its middle, the half at
  // an end showing the direction that leaves from it.
  const bundles = new Map();
  for (const p of pairs) {
    if (!pos.has(p.a.dpid) || !pos.has(p.b.dpid)) continue; // a switch that just left
    const k = [p.a.dpid, p.b.dpid].sort().join(" ");
    if (!bundles.has(k)) bundles.set(k, []);
    bundles.get(k).push(p);
  }
  for (const bundle of bundles.values()) {
    bundle.forEach((p, i) => {
      const A = pos.get(p.a.dpid), B = pos.get(p.b.dpid);
      let C;
      if (A === B) { // a link from a switch to itself: a loop outwards
        const t = A.t === null ? -Math.PI / 2 : A.t;
        C = toward(A, t + 0.3 * i, 60);
      } else {
        const len = Math.hypot(B.x - A.x, B.y - A.y) || 1;
        const bend = (i - (bundle.length - 1) / 2) * 24;
        C = { x: (A.x + B.x) / 2 - bend * (B.y - A.y) / len, y: (A.y + B.y) / 2 + bend * (B.x - A.x) / len };
      }
      const M = mid(mid(A, C), mid(C, B));
      reach(M, 16);
      // One half of the curve: from an end to M, its rate labelled at its
      // middle.
      const half = (from, ctl, l) => {
        const d = `d="M${pt(from)} Q${pt(ctl)} ${pt(M)}"`;
        if (!l) return `<path ${d} class="none"><title>not discovered in this direction</title></path>`;
        const at = mid(mid(from, ctl), mid(ctl, M));
        return `<path ${d} ${linkStroke(l)}><title>${esc(directionText(l, names))}</title></path>` +
          (labelled ? `<text ${xy({ x: at.x, y: at.y - 4 })} text-anchor="middle">${esc(bitRate(l.rate_bps))}</text>` : "");
      };
      parts.push(`<g class="link" data-a="${esc(endKey(p.a))}" data-b="${esc(endKey(p.b))}" data-both="${!!(p.ab && p.ba)}">` +
        half(A, mid(A, C), p.ab) + half(B, mid(C, B), p.ba) + "</g>");
    });
  }

  for (const s of switches) {
    const P = pos.get(s.dpid);
    const hosts = hostsOf.get(s.dpid);
    reach(P, 26);
    if (hosts.length && labelled && hosts.length <= TOPO_HOSTS) {
      hosts.forEach((h, j) => {
        const H = hostAt(P, j, hosts.length);
        reach(H, 22);
        parts.push(hostNode(P, H, h));
      });
    } else if (hosts.length) {
      const Q = toward(P, P.t === null ? Math.PI / 2 : P.t, 34);
      reach(Q, 12);
      const list = hosts.slice(0, 20).map((h) => `${h.address} port ${h.port_name || h.port}`).join("\n") +
        (hosts.length > 20 ? `\n… ${hosts.length - 20} more` : "");
      parts.push(`<g class="hosts" data-dpid="${esc(s.dpid)}" data-count="${hosts.length}">` +
        `<line ${xy(P, "x1", "y1")} ${xy(Q, "x2", "y2")}/><circle ${xy(Q, "cx", "cy")} r="9"/>` +
        `<text ${xy({ x: Q.x, y: Q.y + 3.5 })} text-anchor="middle">${hosts.length}</text>` +
        `<title>${esc(`${counted(hosts.length, "host")} on ${s.dpid}:\n${list}`)}</title></g>`);
    }
    const up = s.ports.filter((p) => p.up).length;
    parts.push(`<g class="switch" data-dpid="${esc(s.dpid)}">` +
      `<circle ${xy(P, "cx", "cy")} r="${labelled ? 12 : 8}"/>` +
      (labelled ? `<text ${xy({ x: P.x, y: P.y - 17 })} text-anchor="middle">${esc(names.get(s.dpid))}</text>` : "") +
      `<title>${esc(`switch ${s.dpid}: ${up} of ${counted(s.ports.length, "port")} up, ${counted(hosts.length, "host")}`)}</title></g>`);
  }
  const height = Math.max(120, low - high);
  svg.setAttribute("viewBox", `0 ${((high + low - height) / 2).toFixed(1)} ${TOPO_W} ${height.toFixed(1)}`);
  svg.innerHTML = parts.join("");
  return summary;
}

// hostAt places the j-th of k hosts of the switch at P: fanned outwards
// from the middle, or all round a switch alone.
function hostAt(P, j, k) {
  const t = P.t === null ? 2 * Math.PI * j / k - Math.PI / 2 : P.t + (j - (k - 1) / 2) * Math.min(0.35, 2.1 / k);
  return { ...toward(P, t, HOST_DIST), t };
}

// hostNode draws host h at H, tied to its switch at P; its label leans
// away from the switch, so that the labels of a fan do not overlap.
function hostNode(P, H, h) {
  const L = toward(H, H.t, 9);
  const anchor = H.x - P.x > 8 ? "start" : H.x - P.x < -8 ? "end" : "middle";
  const port = h.port_name ? `${h.port_name} (${h.port})` : h.port;
  return `<g class="host" data-address="${esc(h.address)}" data-dpid="${esc(h.dpid)}">` +
    `<line ${xy(P, "x1", "y1")} ${xy(H, "x2", "y2")}/><circle ${xy(H, "cx", "cy")} r="5"/>` +
    `<text ${xy({ x: L.x, y: L.y + 4 })} text-anchor="${anchor}">${esc(h.address)}</text>` +
    `<title>${esc(`${h.address} (${h.mac}) on ${h.dpid} port ${port}`)}</title></g>`;
}
