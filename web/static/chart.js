// Small line charts over the last minutes, drawn as SVG by hand: one
// path per line (broken where the series has a gap), a scale that starts at
// zero, and health transitions as vertical marks.
"use strict";

const CHART_W = 300;
const PLOT_TOP = 12, PLOT_BOTTOM = 68, CHART_H = 82;
const PALETTE = ["#0969da", "#bf8700", "#8250df", "#1a7f37", "#cf222e", "#1b7c83", "#bc4c00", "#57606a"];

const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

// niceMax rounds a peak up to 1, 2 or 5 times a power of ten.
function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

// One formatter: toLocaleTimeString builds one per call, which costs more
// than the rest of a chart.
const timeFormat = new Intl.DateTimeFormat([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
const clock = (ms) => timeFormat.format(ms);

// The time axis' labels per span (s): [seconds ago, text].
const TICKS = {
  900: [[900, "−15 min"], [600, "−10"], [300, "−5"]],
  300: [[300, "−5 min"], [240, "−4"], [180, "−3"], [120, "−2"], [60, "−1"]],
  60: [[60, "−60 s"], [45, "−45"], [30, "−30"], [15, "−15"]],
};

// drawChart draws spec into svg:
//   lines:  [{ label, color, value: (second) => number (NaN: gap) }]
//   marks:  [{ t (ms), status, label, member }]
//   now:    the right edge (ms, the server's clock); span: the seconds
//           shown (a key of TICKS); format: a value as text.
// The svg keeps what it drew in data-peak (the highest value), data-points
// and data-marks, and the spec for the hover readout.
function drawChart(svg, spec) {
  const span = spec.span;
  const right = spec.now / 1000;
  const first = Math.floor(right) - span + 1;
  const last = Math.floor(right);

  let peak = 0;
  const columns = spec.lines.map((line) => {
    const vals = new Float64Array(Math.max(0, last - first + 1));
    for (let s = first; s <= last; s++) {
      const v = line.value(s);
      vals[s - first] = v;
      if (v > peak) peak = v;
    }
    return vals;
  });
  const top = niceMax(peak);
  // Lines are drawn in tenths of the viewBox's units, as integers: turning
  // numbers into text is most of the cost of a chart.
  const xs = 10 * CHART_W / span, x0 = 10 * (first + 0.5 - (right - span)) * CHART_W / span;
  const ys = 10 * (PLOT_BOTTOM - PLOT_TOP) / top, y0 = 10 * PLOT_BOTTOM;

  let points = 0;
  const parts = [
    `<line class="axis" x1="0" x2="${CHART_W}" y1="${PLOT_BOTTOM}" y2="${PLOT_BOTTOM}"/>`,
    `<line class="grid" x1="0" x2="${CHART_W}" y1="${PLOT_TOP}" y2="${PLOT_TOP}"/>`,
    `<text x="2" y="${PLOT_TOP - 3}">${esc(spec.format(top))}</text>`,
    ...TICKS[span].map(([ago, text], i) => `<text x="${i ? (span - ago) / span * CHART_W : 2}" y="${CHART_H - 2}"` +
      `${i ? ' text-anchor="middle"' : ""}>${text}</text>`),
    `<text x="${CHART_W - 2}" y="${CHART_H - 2}" text-anchor="end">now</text>`,
    `<g transform="scale(.1)">`,
  ];
  spec.lines.forEach((line, i) => {
    let d = "";
    let open = false;
    const vals = columns[i];
    for (let j = 0; j < vals.length; j++) {
      const v = vals[j];
      if (Number.isNaN(v)) { open = false; continue; }
      d += (open ? "L" : "M") + Math.round(x0 + j * xs) + " " + Math.round(y0 - v * ys);
      open = true;
      points++;
    }
    parts.push(`<path class="line" vector-effect="non-scaling-stroke" stroke="${line.color}" d="${d || "M0 0"}" data-label="${esc(line.label)}"/>`);
  });
  parts.push("</g>");
  // Marks of one status that fall on one x are drawn once, naming every
  // member: a monitor change moves a pool's members together.
  const groups = new Map();
  for (const m of spec.marks) {
    const s = m.t / 1000;
    if (s < right - span || s > right) continue;
    const mx = Math.round((s - (right - span)) / span * CHART_W);
    const key = `${mx} ${m.status}`;
    if (!groups.has(key)) groups.set(key, { mx, status: m.status, t: m.t, members: [], what: [] });
    const g = groups.get(key);
    if (m.member) g.members.push(m.member);
    g.what.push(`${m.label ? m.label + " " : ""}${m.status} at ${clock(m.t)}`);
  }
  for (const g of groups.values()) {
    parts.push(`<g class="mark ${esc(g.status)}" data-member="${esc(g.members.join(" "))}" data-t="${g.t}">` +
      `<title>${esc(g.what.join("\n"))}</title>` +
      `<line x1="${g.mx}" x2="${g.mx}" y1="${PLOT_TOP}" y2="${PLOT_BOTTOM}"/>` +
      `<text x="${g.mx}" y="${PLOT_TOP - 3}" text-anchor="middle">${g.status === "DOWN" ? "▼" : g.status === "UP" ? "▲" : "◆"}</text></g>`);
  }
  parts.push(`<line class="cursor" x1="-1" x2="-1" y1="${PLOT_TOP}" y2="${PLOT_BOTTOM}"/>`);
  svg.innerHTML = parts.join("");
  svg.dataset.peak = peak;
  svg.dataset.points = points;
  svg.dataset.marks = groups.size;
  svg.chartSpec = { spec, first, last };
}

// newChart returns a chart box: a title, a readout of the values under
// the pointer, a legend and the svg.
function newChart(kind, title) {
  const box = document.createElement("figure");
  box.className = "chart";
  box.innerHTML = `<figcaption><span class="title">${esc(title)}</span> <span class="readout"></span>` +
    `<span class="legend"></span></figcaption>` +
    `<svg class="chart" data-kind="${esc(kind)}" viewBox="0 0 ${CHART_W} ${CHART_H}" role="img" aria-label="${esc(title)}"></svg>`;
  const svg = box.querySelector("svg");
  const readout = box.querySelector(".readout");
  svg.addEventListener("mousemove", (e) => {
    const held = svg.chartSpec;
    if (!held) return;
    const { spec, first, last } = held;
    const s = Math.min(last, first + Math.floor(e.offsetX / svg.clientWidth * spec.span));
    const cursor = svg.querySelector(".cursor");
    const cx = (e.offsetX / svg.clientWidth * CHART_W).toFixed(1);
    cursor.setAttribute("x1", cx);
    cursor.setAttribute("x2", cx);
    readout.textContent = `${clock(s * 1000)} ` + spec.lines.map((l) => {
      const v = l.value(s);
      return `${spec.lines.length > 1 ? l.label + " " : ""}${Number.isNaN(v) ? "no data" : spec.format(v)}`;
    }).join(" · ");
  });
  svg.addEventListener("mouseleave", () => {
    readout.textContent = "";
    const cursor = svg.querySelector(".cursor");
    if (cursor) cursor.setAttribute("x1", -1), cursor.setAttribute("x2", -1);
  });
  return box;
}

// setLegend shows the lines' labels in their colours.
function setLegend(box, lines) {
  const key = lines.map((l) => l.label + l.color).join("|");
  const legend = box.querySelector(".legend");
  if (legend.dataset.key === key) return;
  legend.dataset.key = key;
  legend.innerHTML = lines.length > 1
    ? lines.map((l) => `<span style="color:${l.color}">━ ${esc(l.label)}</span>`).join(" ") : "";
}
