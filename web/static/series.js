// The time series behind the dashboard's charts. One Track per pool and
// per member holds the last 15 minutes at one value a second in ring
// buffers, fed by the samples of the stats watch stream: rates come from
// the differences of counters between two samples of one connection of the
// stream, so a stream that was down leaves a gap, never a zero. A pool's
// share of each node has a track of a few seconds: enough for its figures
// of now.
"use strict";

const WINDOW_S = 900; // 15 minutes of one-second slots
const NOW_WINDOW_S = 16; // a track for the figures of now: the last full second and the ones being filled
// A counter's step is spread over at most this long before the sample that
// shows it: the switches' counters are read every 2 s (--stats-interval),
// and between two steps the stream sends nothing.
const SPREAD_MS = 2000;
// With no sample for this long on a stream that is up, the counters have
// not moved (the stream sends a pool within a second of any change, and a
// switch poll moves them every 2 s): the series go on at rate 0.
const SETTLE_MS = 3000;

// The series of a track, in the order its slots hold them.
const CONNS = 0, ACTIVE = 1, BYTES_IN = 2, BYTES_OUT = 3;
const NSERIES = 4;
const COUNTERS = [["conns", CONNS], ["bytesIn", BYTES_IN], ["bytesOut", BYTES_OUT]];
const MAX_MARKS = 64;

// counterStep is how far a counter moved from base, the highest value seen
// on this stream, to v; null when unknown. A fall by more than half is a
// reset (a switch reconnected, or the pool lost members) and its interval
// becomes a gap; a smaller fall is a correction (a flow counted when it was
// removed and also in the last switch poll, until the next) and counts as
// no movement: the counter must first climb back to base.
function counterStep(base, v) {
  if (v >= base) return v - base;
  return v < base / 2 ? null : 0;
}

class Track {
  // window is the seconds the track keeps.
  constructor(window = WINDOW_S) {
    this.window = window;
    this.stamp = new Int32Array(window); // the unix second a slot holds; 0 for none
    this.covered = new Uint16Array(window); // ms of the slot's second the samples cover
    this.values = new Float32Array(window * NSERIES);
    this.last = null; // the last sample of the stream connection it came on
    this.settled = 0; // ms up to which the samples cover time
    this.marks = []; // health transitions: { t (ms), status }
    this.status = "";
    this.since = 0;
  }

  // slot returns the index of second s, claiming the slot for s first
  // (nothing covered, rates 0) unless it holds s already.
  slot(s) {
    const i = s % this.window;
    if (this.stamp[i] !== s) {
      this.stamp[i] = s;
      this.covered[i] = 0;
      this.values.fill(0, i * NSERIES, (i + 1) * NSERIES);
    }
    return i;
  }

  // value of series k at unix second s; NaN for a gap: a second the
  // samples of one stream connection do not cover whole, or one over
  // which a counter was reset.
  value(k, s) {
    const i = s % this.window;
    return this.stamp[i] === s && this.covered[i] >= 1000 ? this.values[i * NSERIES + k] : NaN;
  }

  // lastFull is the last second that can have a value.
  lastFull() {
    return Math.floor(this.settled / 1000) - 1;
  }

  // sample adds the counters c ({conns, active, bytesIn, bytesOut}) read at
  // t (ms, the server's clock) and received on stream connection epoch,
  // and returns the steps it took from them ({conns, bytesIn, bytesOut},
  // null for a reset), or null when it took none (the connection's first
  // sample). A pool passes its members' steps summed as steps: its own sums
  // would hide a member's reset as a correction.
  sample(t, epoch, c, steps) {
    const prev = this.last && this.last.epoch === epoch ? this.last : null;
    if (prev && t <= prev.t) return null; // not after the last one: nothing to learn
    if (!prev) {
      // The first sample of a connection: a level to measure steps from.
      this.last = { t, epoch, active: c.active, conns: c.conns, bytesIn: c.bytesIn, bytesOut: c.bytesOut };
      this.settled = t;
      return null;
    }
    // Active connections are a level: the previous one held until t.
    this.cover(this.settled, t, prev.active);
    const took = {};
    for (const [name, k] of COUNTERS) {
      const step = steps ? steps[name] : counterStep(prev[name], c[name]);
      if (step === null) this.fill(k, prev.t, t, NaN);
      else if (step > 0) this.spread(k, step, Math.max(prev.t, t - SPREAD_MS), t);
      prev[name] = steps || step === null ? c[name] : prev[name] + step;
      took[name] = step;
    }
    prev.t = t;
    prev.active = c.active;
    this.settled = t;
    return took;
  }

  // settle carries the last sample on to now - SETTLE_MS while its stream
  // connection is the live one: the counters did not move meanwhile.
  settle(now, liveEpoch) {
    if (!this.last || this.last.epoch !== liveEpoch) return;
    const end = now - SETTLE_MS;
    if (end <= this.settled) return;
    this.cover(this.settled, end, this.last.active);
    this.settled = end;
  }

  // slots gives the first and last second whose slots overlap (a, b], at
  // most the last window of them.
  slots(a, b) {
    const last = Math.floor((b - 1) / 1000);
    const first = Math.max(Math.floor(a / 1000), last - this.window + 1);
    return [first, last];
  }

  static overlap(s, a, b) {
    return Math.min(b, (s + 1) * 1000) - Math.max(a, s * 1000);
  }

  // cover marks (a, b] as seen, with active connections active.
  cover(a, b, active) {
    if (b <= a) return;
    const [first, last] = this.slots(a, b);
    for (let s = first; s <= last; s++) {
      const i = this.slot(s);
      this.covered[i] += Math.max(0, Track.overlap(s, a, b));
      this.values[i * NSERIES + ACTIVE] = active;
    }
  }

  // spread adds a counter's step over (a, b] to the per-second rates,
  // each slot its share by overlap.
  spread(k, step, a, b) {
    const [first, last] = this.slots(a, b);
    for (let s = first; s <= last; s++) {
      const o = Track.overlap(s, a, b);
      if (o > 0) this.values[this.slot(s) * NSERIES + k] += step * o / (b - a);
    }
  }

  // fill sets series k over (a, b].
  fill(k, a, b, v) {
    const [first, last] = this.slots(a, b);
    for (let s = first; s <= last; s++) this.values[this.slot(s) * NSERIES + k] = v;
  }

  // observe notes the health status a sample t shows, entered at since
  // (ms, 0 when unknown), and marks a transition: at since when since moved
  // (also when the status left and came back between two samples), else
  // at t (DRAINING is the operator's, not the monitors'). A status seen
  // first is marked only when it was entered within the window.
  observe(status, since, t) {
    if (status === this.status && since === this.since) return;
    const first = this.status === "";
    const known = since > this.since && since <= t; // the status was entered at since
    this.status = status;
    this.since = since;
    if (first && !(known && since >= t - WINDOW_S * 1000)) return;
    const at = known ? since : t;
    this.marks.push({ t: at, status });
    const old = t - WINDOW_S * 1000;
    while (this.marks.length > MAX_MARKS || (this.marks.length && this.marks[0].t < old)) this.marks.shift();
  }
}
