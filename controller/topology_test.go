package controller

import (
	"slices"
	"testing"
	"time"
)

func TestTopology(t *testing.T) {
	a1, a2 := portRef{dpid: 1, port: 1}, portRef{dpid: 1, port: 2}
	b1, b2 := portRef{dpid: 2, port: 1}, portRef{dpid: 2, port: 2}
	now := time.Unix(1000, 0)
	state := func(src, dst portRef, both bool) linkState { return linkState{link: link{src, dst}, both: both} }
	assert := func(tb testing.TB, top *topology, want ...linkState) {
		tb.Helper()
		if got := top.links(); !slices.Equal(got, want) {
			tb.Fatalf("links = %v, want %v", got, want)
		}
	}

	t.Run("DirectionsPaired", func(t *testing.T) {
		top := newTopology()
		top.discovered(now, a1, b1)
		assert(t, top, state(a1, b1, false))
		top.discovered(now, b1, a1)
		assert(t, top, state(a1, b1, true), state(b1, a1, true))
	})
	t.Run("Expire", func(t *testing.T) {
		top := newTopology()
		top.discovered(now, a1, b1)
		top.discovered(now.Add(2*lldpInterval), b1, a1)
		top.expire(now.Add(linkTimeout))
		assert(t, top, state(a1, b1, true), state(b1, a1, true))
		// Three rounds without a1's frame: gone; b1's came later and stays.
		top.expire(now.Add(linkTimeout + time.Millisecond))
		assert(t, top, state(b1, a1, false))
		top.discovered(now.Add(linkTimeout+lldpInterval), a1, b1)
		assert(t, top, state(a1, b1, true), state(b1, a1, true))
	})
	t.Run("PortDownRemovesAtOnce", func(t *testing.T) {
		top := newTopology()
		top.discovered(now, a1, b1)
		top.discovered(now, b1, a1)
		top.discovered(now, a2, b2)
		top.portDown(b1)
		assert(t, top, state(a2, b2, false))
	})
	t.Run("SwitchGone", func(t *testing.T) {
		top := newTopology()
		top.discovered(now, a1, b1)
		top.discovered(now, b2, a2)
		top.discovered(now, portRef{dpid: 3, port: 1}, portRef{dpid: 4, port: 1})
		top.switchGone(2)
		assert(t, top, state(portRef{dpid: 3, port: 1}, portRef{dpid: 4, port: 1}, false))
	})
}
