package health

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

var t0 = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

func TestCheck_Record(t *testing.T) {
	const rise, fall = 2, 3
	tests := []struct {
		name    string
		start   check
		results string // s: success, f: failure
		want    string // verdict after each result: u or d
	}{
		{"UpStaysUpOnSuccess", check{up: true}, "sss", "uuu"},
		{"UpFallsAfterMaxRetries", check{up: true}, "fffff", "uuddd"},
		{"SuccessResetsFailures", check{up: true}, "ffsfff", "uuuuud"},
		{"DownStaysDownOnFailure", check{}, "fff", "ddd"},
		{"DownRisesAfterRise", check{}, "sss", "duu"},
		{"FailureResetsSuccesses", check{}, "sfss", "dddu"},
		{"FreshFirstSuccessIsUp", check{fresh: true}, "s", "u"},
		{"FreshFirstFailureThenNeedsRise", check{fresh: true}, "fsss", "dduu"},
		{"FreshThenFallsAfterMaxRetries", check{fresh: true}, "sfff", "uuud"},
		{"FlapsBackAndForth", check{up: true}, "fffssfff", "uudduuud"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.start
			for i, r := range tt.results {
				before := c.up
				flipped := c.record(r == 's', rise, fall)
				got := "d"
				if c.up {
					got = "u"
				}
				if got != string(tt.want[i]) {
					t.Fatalf("after result %d (%c): verdict %s, want %c", i+1, r, got, tt.want[i])
				}
				if flipped != (before != c.up) {
					t.Fatalf("after result %d: flipped = %v, verdict went %v -> %v", i+1, flipped, before, c.up)
				}
			}
		})
	}
}

// step is one event in a member's life: a reconcile or a probe result.
type step struct {
	set     []string // monitors after a reconcile; used when probe is ""
	probe   string   // the monitor whose probe ended
	fail    bool
	out     bool               // the probe's agent said its member is out
	want    sdnlb.MemberStatus // the transition's target; "" for none
	wantWhy string             // a substring of the transition's reason
}

func TestMemberState(t *testing.T) {
	checked := t0.Add(-time.Hour)
	up := sdnlb.MemberHealth{Status: sdnlb.MemberUp, LastCheck: &checked}
	down := sdnlb.MemberHealth{Status: sdnlb.MemberDown, LastCheck: &checked}
	created := sdnlb.MemberHealth{Status: sdnlb.MemberDown} // by the store, never checked
	noMonitor := sdnlb.MemberHealth{Status: sdnlb.MemberNoMonitor}
	const rise, fall = 2, 3
	tests := []struct {
		name  string
		start sdnlb.MemberHealth
		steps []step
	}{
		{"CreatedUpOnFirstSuccess", created, []step{
			{set: []string{"a"}},
			{probe: "a", want: sdnlb.MemberUp, wantWhy: "first check passed"},
			{probe: "a"},
		}},
		{"CreatedFirstFailureNeedsRise", created, []step{
			{set: []string{"a"}},
			{probe: "a", fail: true},
			{probe: "a"},
			{probe: "a", want: sdnlb.MemberUp, wantWhy: "2 consecutive successes"},
		}},
		{"UpDownAfterMaxRetriesOnce", up, []step{
			{set: []string{"a"}},
			{probe: "a", fail: true},
			{probe: "a", fail: true},
			{probe: "a", fail: true, want: sdnlb.MemberDown, wantWhy: "3 consecutive failures: boom"},
			{probe: "a", fail: true},
			{probe: "a", fail: true},
		}},
		{"DownUpAfterRise", down, []step{
			{set: []string{"a"}},
			{probe: "a"},
			{probe: "a", want: sdnlb.MemberUp},
		}},
		{"RestartKeepsUpMemberUp", up, []step{
			{set: []string{"a"}},
			{probe: "a"},
		}},
		{"TwoMonitorsAnyDownIsDown", up, []step{
			{set: []string{"a", "b"}},
			{probe: "a"},
			{probe: "b", fail: true},
			{probe: "b", fail: true},
			{probe: "a"},
			{probe: "b", fail: true, want: sdnlb.MemberDown},
			{probe: "a", fail: true},
			{probe: "a", fail: true},
			{probe: "a", fail: true},
			{probe: "b"},
			{probe: "b"}, // b is up again, a is still down
			{probe: "a"},
			{probe: "a", want: sdnlb.MemberUp},
		}},
		{"CreatedTwoMonitorsNeedsBothFirstChecks", created, []step{
			{set: []string{"a", "b"}},
			{probe: "a"},
			{probe: "b", want: sdnlb.MemberUp},
		}},
		{"NoMonitorToUpWhenMonitorAdded", noMonitor, []step{
			{set: nil},
			{set: []string{"a"}, want: sdnlb.MemberUp, wantWhy: "monitors changed"},
			{probe: "a", fail: true},
			{probe: "a", fail: true},
			{probe: "a", fail: true, want: sdnlb.MemberDown},
		}},
		{"MonitorsRemovedNoMonitor", down, []step{
			{set: []string{"a"}},
			{set: nil, want: sdnlb.MemberNoMonitor, wantWhy: "no monitor"},
			{probe: "a", fail: true}, // a late result of a removed monitor
		}},
		{"FailingMonitorRemovedUp", up, []step{
			{set: []string{"a", "b"}},
			{probe: "b", fail: true},
			{probe: "b", fail: true},
			{probe: "b", fail: true, want: sdnlb.MemberDown},
			{set: []string{"a"}, want: sdnlb.MemberUp},
		}},
		{"MonitorAddedToDownMemberNeedsRise", down, []step{
			{set: []string{"a"}},
			{set: []string{"a", "b"}},
			{probe: "a"},
			{probe: "a"}, // a is up, b has not risen yet
			{probe: "b"},
			{probe: "b", want: sdnlb.MemberUp},
		}},
		{"MonitorReplacedKeepsCountersOfTheOther", up, []step{
			{set: []string{"a", "b"}},
			{probe: "a", fail: true},
			{probe: "a", fail: true},
			{set: []string{"a", "c"}},
			{probe: "a", fail: true, want: sdnlb.MemberDown},
		}},
		{"StoredStatusEmptyIsNoMonitor", sdnlb.MemberHealth{}, []step{
			{set: nil},
			{set: []string{"a"}, want: sdnlb.MemberUp},
		}},
		// An agent that says its member is out takes it DOWN at once,
		// whatever max_retries says; back, it needs rise successes.
		{"AgentOutDownAtOnce", up, []step{
			{set: []string{"agent", "tcp"}},
			{probe: "tcp"},
			{probe: "agent", out: true, want: sdnlb.MemberDown, wantWhy: "monitor agent: the agent says stopped"},
			{probe: "agent", out: true},
			{probe: "agent"},
			{probe: "agent", want: sdnlb.MemberUp, wantWhy: "2 consecutive successes"},
		}},
		{"AgentOutAfterFailures", up, []step{
			{set: []string{"agent"}},
			{probe: "agent", fail: true},
			{probe: "agent", out: true, want: sdnlb.MemberDown},
		}},
		{"AgentOutFirstCheck", created, []step{
			{set: []string{"agent"}},
			{probe: "agent", out: true}, // DOWN already
			{probe: "agent"},
			{probe: "agent", want: sdnlb.MemberUp},
		}},
		{"AgentUpTCPDownIsDown", up, []step{
			{set: []string{"agent", "tcp"}},
			{probe: "agent"},
			{probe: "tcp", fail: true},
			{probe: "tcp", fail: true},
			{probe: "agent"},
			{probe: "tcp", fail: true, want: sdnlb.MemberDown},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newMemberState(tt.start)
			now := t0
			for i, st := range tt.steps {
				now = now.Add(time.Second)
				var tr transition
				var changed bool
				if st.probe == "" {
					tr, changed = s.setMonitors(st.set, now)
				} else {
					var err error
					switch {
					case st.fail:
						err = errors.New("boom")
					case st.out:
						err = &agentOutError{word: "stopped"}
					}
					tr, changed = s.observe(st.probe, probeResult{Err: err, Latency: time.Millisecond}, rise, fall, now)
				}
				if st.want == "" {
					if changed {
						t.Fatalf("step %d: unexpected transition %+v", i+1, tr)
					}
					continue
				}
				if !changed || tr.To != st.want {
					t.Fatalf("step %d: transition %+v (changed %v), want to %s", i+1, tr, changed, st.want)
				}
				if !strings.Contains(tr.Reason, st.wantWhy) {
					t.Errorf("step %d: reason %q, want it to say %q", i+1, tr.Reason, st.wantWhy)
				}
				if s.health.Status != st.want || !s.health.Since.Equal(now) {
					t.Errorf("step %d: health %s since %v, want %s since %v", i+1, s.health.Status, s.health.Since, st.want, now)
				}
			}
		})
	}
}

func TestMemberState_Observe(t *testing.T) {
	t.Run("RecordsLastCheckLatencyAndError", func(t *testing.T) {
		s := newMemberState(sdnlb.MemberHealth{Status: sdnlb.MemberUp, Since: t0})
		s.setMonitors([]string{"a", "b"}, t0)
		at := t0.Add(time.Second)
		s.observe("b", probeResult{Err: errors.New("refused"), Latency: 1500 * time.Microsecond}, 2, 3, at)
		h := s.health
		if h.LastCheck == nil || !h.LastCheck.Equal(at) || h.LatencyMS != 1.5 || h.LastError != "refused" {
			t.Fatalf("health = %+v, want last check %v, 1.5 ms, error refused", h, at)
		}
		if h.Status != sdnlb.MemberUp || !h.Since.Equal(t0) {
			t.Fatalf("status %s since %v: one failure must not change it", h.Status, h.Since)
		}
		s.observe("a", probeResult{Latency: time.Millisecond}, 2, 3, at.Add(time.Second))
		if s.health.LastError != "refused" {
			t.Fatalf("LastError = %q: b's latest probe still failed", s.health.LastError)
		}
		s.observe("b", probeResult{Latency: time.Millisecond}, 2, 3, at.Add(2*time.Second))
		if s.health.LastError != "" {
			t.Fatalf("LastError = %q after every monitor passed", s.health.LastError)
		}
	})
	t.Run("UnknownMonitorChangesNothing", func(t *testing.T) {
		s := newMemberState(sdnlb.MemberHealth{Status: sdnlb.MemberDown})
		s.setMonitors([]string{"a"}, t0)
		if _, changed := s.observe("gone", probeResult{}, 1, 1, t0); changed || s.health.LastCheck != nil {
			t.Fatalf("a result of an unknown monitor was recorded: %+v", s.health)
		}
	})
}

func TestMemberState_Hear(t *testing.T) {
	// Each step is a reply heard a given time after the start, and
	// whether the store must hear of it.
	type hear struct {
		after     time.Duration
		reply     agentReply
		write     bool
		available int
		drain     bool
	}
	said := func(available int) agentReply { return agentReply{available: available} }
	drain := agentReply{available: -1, drain: true}
	ready := agentReply{available: -1, undrain: true}
	for _, tc := range []struct {
		name  string
		start *sdnlb.AgentReport // stored
		steps []hear
	}{
		{"FirstReportAtOnce", nil, []hear{
			{0, said(80), true, 80, false},
			{100 * time.Millisecond, said(80), false, 80, false},
		}},
		{"FirstWordsWithoutShareAre100", nil, []hear{{0, ready, true, 100, false}}},
		{"SmallMovesWait", nil, []hear{
			{0, said(80), true, 80, false},
			{200 * time.Millisecond, said(78), false, 78, false},
			{time.Second, said(76), false, 76, false}, // 4 points from what was written
			{1200 * time.Millisecond, said(74), true, 74, false},
		}},
		{"BigMoveWaitsASecond", nil, []hear{
			{0, said(80), true, 80, false},
			{200 * time.Millisecond, said(50), false, 50, false},
			{800 * time.Millisecond, said(50), false, 50, false},
			{time.Second, said(50), true, 50, false},
			{1100 * time.Millisecond, said(50), false, 50, false},
		}},
		{"BackWhereWrittenIsNothing", nil, []hear{
			{0, said(80), true, 80, false},
			{200 * time.Millisecond, said(50), false, 50, false},
			{2 * time.Second, said(80), false, 80, false},
		}},
		{"DrainAtOnceKeepsShare", nil, []hear{
			{0, said(80), true, 80, false},
			{100 * time.Millisecond, drain, true, 80, true},
			{200 * time.Millisecond, said(60), false, 60, true}, // still drained
			{300 * time.Millisecond, ready, true, 60, false},
			{400 * time.Millisecond, agentReply{available: 40, drain: true}, true, 40, true},
		}},
		{"StoredReportCounts", &sdnlb.AgentReport{Available: 70, Drain: true, At: t0.Add(-time.Hour)}, []hear{
			{0, said(72), false, 72, true},
			{100 * time.Millisecond, said(60), true, 60, true}, // written an hour ago
			{200 * time.Millisecond, ready, true, 60, false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newMemberState(sdnlb.MemberHealth{Status: sdnlb.MemberUp, Agent: tc.start})
			for i, h := range tc.steps {
				now := t0.Add(h.after)
				before := s.health.Agent
				write := s.hear(h.reply, now)
				a := s.health.Agent
				if write != h.write || a.Available != h.available || a.Drain != h.drain || !a.At.Equal(now) {
					t.Fatalf("step %d: write %v, report %+v; want write %v, %d%%, drain %v at %v", i+1, write, a, h.write, h.available, h.drain, now)
				}
				if a == before {
					t.Fatalf("step %d: the published report was changed in place", i+1)
				}
				if write {
					s.wrote(now)
				}
			}
		})
	}
	t.Run("Forget", func(t *testing.T) {
		s := newMemberState(sdnlb.MemberHealth{Status: sdnlb.MemberUp})
		if s.forgetAgent() {
			t.Fatal("forgot a report that never was")
		}
		s.hear(agentReply{available: 10, drain: true}, t0)
		s.wrote(t0)
		if !s.forgetAgent() || s.health.Agent != nil {
			t.Fatalf("report %+v after forgetting it", s.health.Agent)
		}
		s.wrote(t0)
		if !s.hear(agentReply{available: 10, drain: true}, t0.Add(time.Millisecond)) {
			t.Fatal("a report after a forgotten one is not written at once")
		}
	})
}
