package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/ofp10"
)

func TestWiring(t *testing.T) {
	tests := []struct {
		name           string
		kind           string
		switches       int
		spines         int
		wantPorts      []int // link ports per switch
		wantDirected   int
		wantFarOfFirst map[uint32]end
	}{
		// Ring links 0-1, 1-2, 2-3, 3-0, then the chords 0-2 and 1-3.
		{"Ring4", topoRing, 4, 0, []int{3, 3, 3, 3}, 12,
			map[uint32]end{1000: {1, 1000}, 1001: {3, 1001}, 1002: {2, 1002}}},
		// Odd: the last switch has no chord.
		{"Ring5", topoRing, 5, 0, []int{3, 3, 3, 3, 2}, 14,
			map[uint32]end{1000: {1, 1000}, 1001: {4, 1001}, 1002: {2, 1002}}},
		{"Ring64", topoRing, 64, 0, slices.Repeat([]int{3}, 64), 192, nil},
		{"LeafSpine", topoLeafSpine, 6, 2, []int{4, 4, 2, 2, 2, 2}, 16,
			map[uint32]end{1000: {2, 1000}, 1001: {3, 1000}, 1002: {4, 1000}, 1003: {5, 1000}}},
		{"LeafSpine64", topoLeafSpine, 64, 4, append(slices.Repeat([]int{60}, 4), slices.Repeat([]int{4}, 60)...), 480, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWiring(tt.kind, tt.switches, tt.spines)
			var ports []int
			for sw, far := range w.far {
				ports = append(ports, w.linkPorts(sw))
				for p, e := range far {
					if p < linkPort0 || p >= linkPort0+uint32(len(far)) {
						t.Errorf("switch %d has link port %d, want them numbered from %d", sw, p, linkPort0)
					}
					if back := w.far[e.sw][e.port]; back != (end{sw, p}) || e.sw == sw {
						t.Errorf("switch %d port %d leads to %+v, which leads to %+v", sw, p, e, back)
					}
				}
			}
			if !slices.Equal(ports, tt.wantPorts) {
				t.Errorf("link ports per switch %v, want %v", ports, tt.wantPorts)
			}
			if tt.wantFarOfFirst != nil && !reflect.DeepEqual(w.far[0], tt.wantFarOfFirst) {
				t.Errorf("switch 0's links %v, want %v", w.far[0], tt.wantFarOfFirst)
			}
			d := w.directed()
			if len(d) != tt.wantDirected || len(slices.Compact(slices.Clone(d))) != len(d) {
				t.Errorf("%d directed links (%d distinct), want %d", len(d), len(slices.Compact(slices.Clone(d))), tt.wantDirected)
			}
		})
	}
	if got, want := newWiring(topoRing, 4, 0).directed()[0], "5d:b0:00:00:00:00:00:01/1000>5d:b0:00:00:00:00:00:02/1000"; got != want {
		t.Errorf("first link %q, want %q: the API's datapath ids", got, want)
	}
}

// lldpFrame is an LLDP frame to the nearest bridge, as the controller
// sends out of a port to discover its link.
func lldpFrame(tb testing.TB) []byte {
	tb.Helper()
	frame, err := serialize(
		&layers.Ethernet{SrcMAC: net.HardwareAddr{0x02, 0, 0, 0, 0, 7}, DstMAC: net.HardwareAddr{0x01, 0x80, 0xc2, 0, 0, 0x0e},
			EthernetType: layers.EthernetTypeLinkLayerDiscovery},
		&layers.LinkLayerDiscovery{
			ChassisID: layers.LLDPChassisID{Subtype: layers.LLDPChassisIDSubTypeLocal, ID: []byte("sdnlb:5db0000000000001")},
			PortID:    layers.LLDPPortID{Subtype: layers.LLDPPortIDSubtypeLocal, ID: []byte("1002")},
			TTL:       3,
		})
	if err != nil {
		tb.Fatal(err)
	}
	return frame
}

// The controller's LLDP flow: table 0, nearest-bridge LLDP to CONTROLLER.
const lldpCookie = 0x5d08000000000000

func lldpFlow() *ofp.FlowMod {
	return puntFlow(lldpCookie, 2000, ofp.MatchEthDst([6]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e}), ofp.MatchEthType(0x88cc))
}

// TestFabric_CarriesLLDP sends the controller's LLDP out of ports of
// switch 0 of a 4-switch ring and checks where it arrives: as a packet-in
// from the port at the far end of the link, with the reason and cookie
// the receiver's flows give it (1.0 has no cookie), and nowhere for a port
// that is no link or leads to a switch not connected (switch 1).
func TestFabric_CarriesLLDP(t *testing.T) {
	tests := []struct {
		name       string
		flows      []*ofp.FlowMod // of the receiving switch
		out        uint32         // switch 0's port
		wantAt     int            // the switch the packet-in comes from; -1: none
		wantPort   uint32
		wantReason uint8
		wantCookie uint64
	}{
		{"Chord", []*ofp.FlowMod{puntFlow(0x77, 0), lldpFlow()}, 1002, 2, 1002, ofp.ReasonAction, lldpCookie},
		{"RingBack", []*ofp.FlowMod{lldpFlow()}, 1001, 3, 1001, ofp.ReasonAction, lldpCookie},
		{"BeforeTheFlows", nil, 1002, 2, 1002, ofp.ReasonNoMatch, noFlowCookie},
		{"HostPort", []*ofp.FlowMod{lldpFlow()}, clientPort, -1, 0, 0, 0},
		{"ToASwitchNotConnected", []*ofp.FlowMod{lldpFlow()}, 1000, -1, 0, 0, 0},
	}
	for _, tt := range tests {
		for _, of := range dialects {
			t.Run(tt.name+"/OpenFlow"+of.name(), func(t *testing.T) {
				wantCookie := tt.wantCookie
				if of.version() == ofp10.Version {
					wantCookie = 0 // a 1.0 packet-in has none
				}
				r := &run{of: of, t: ipv4.target(3), timeout: time.Second,
					fabric: newFabric(newWiring(topoRing, 4, 0))}
				sws, peers := map[int]*fakeSwitch{}, map[int]net.Conn{}
				for _, idx := range []int{0, 2, 3} {
					mine, peer := net.Pipe()
					t.Cleanup(func() {
						mine.Close()
						peer.Close()
					})
					sws[idx], peers[idx] = newFakeSwitch(r, idx, mine, 1024), peer
					r.fabric.attach(sws[idx])
					for _, fm := range tt.flows {
						if _, err := sws[idx].table.Apply(fm); err != nil {
							t.Fatal(err)
						}
					}
				}
				frame := lldpFrame(t)
				po, err := of.appendMsg(nil, 1, &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: ofp.PortController,
					Actions: []ofp.Action{ofp.ActionOutput{Port: tt.out}}, Data: frame})
				if err != nil {
					t.Fatal(err)
				}
				sws[0].mu.Lock()
				err = sws[0].handle(po)
				sws[0].mu.Unlock()
				if err != nil {
					t.Fatalf("handle: %v", err)
				}
				clear(po) // as the sender's next read would
				if tt.wantAt < 0 {
					if n := r.fabric.carried.Load(); n != 0 {
						t.Errorf("%d frames carried, want none", n)
					}
					return
				}
				peers[tt.wantAt].SetReadDeadline(time.Now().Add(10 * time.Second))
				msg, err := ofp.ReadMessage(bufio.NewReader(peers[tt.wantAt]), nil)
				if err != nil {
					t.Fatalf("switch %d sent nothing: %v", tt.wantAt, err)
				}
				r.fabric.wg.Wait()
				_, m := decodeAnswer(t, sws[tt.wantAt], msg)
				pin, ok := m.(*ofp.PacketIn)
				if !ok {
					t.Fatalf("switch %d sent %T, want a packet-in", tt.wantAt, m)
				}
				port, _ := pin.Match.InPort()
				if port != tt.wantPort || pin.Reason != tt.wantReason || pin.Cookie != wantCookie || !bytes.Equal(pin.Data, frame) {
					t.Errorf("packet-in from port %d reason %d cookie %#x with %d bytes, want port %d reason %d cookie %#x with the frame sent",
						port, pin.Reason, pin.Cookie, len(pin.Data), tt.wantPort, tt.wantReason, wantCookie)
				}
				if n := r.fabric.carried.Load(); n != 1 {
					t.Errorf("%d frames carried, want 1", n)
				}
			})
		}
	}
}

// TestFabric_NotPunted: a frame from a link that the receiver's flows
// take elsewhere is counted, as a real switch would not punt it.
func TestFabric_NotPunted(t *testing.T) {
	r := &run{of: dialect13{}, t: ipv4.target(3), fabric: newFabric(newWiring(topoRing, 4, 0))}
	mine, peer := net.Pipe()
	defer peer.Close()
	defer mine.Close()
	s := newFakeSwitch(r, 2, mine, 1024)
	if _, err := s.table.Apply(flowTo(0x79, 3000, []uint32{clientPort}, ofp.MatchEthType(0x88cc))); err != nil {
		t.Fatal(err)
	}
	s.arrive(1002, lldpFrame(t))
	if s.notPunted != 1 || !errors.Is(s.firstNotPunted, errNotPunted) {
		t.Errorf("%d not punted (first %v), want 1", s.notPunted, s.firstNotPunted)
	}
}

func TestFakeSwitch_LinkPorts(t *testing.T) {
	r := &run{t: ipv4.target(2), fabric: newFabric(newWiring(topoLeafSpine, 5, 2))}
	var got []uint32
	for _, p := range newFakeSwitch(r, 0, nil, 1024).ports() {
		got = append(got, p.PortNo)
	}
	if want := []uint32{clientPort, memberPort0, memberPort0 + 1, 1000, 1001, 1002, ofp.PortLocal}; !slices.Equal(got, want) {
		t.Errorf("a spine of 3 leaves describes the ports %v, want %v", got, want)
	}
}

func TestMemoryFigures(t *testing.T) {
	rss, err := vmRSS([]byte("Name:\tsdnlb\nVmPeak:\t  900 kB\nVmRSS:\t   12345 kB\nThreads:\t7\n"))
	if err != nil || rss != 12345<<10 {
		t.Errorf("vmRSS = %d, %v; want %d", rss, err, 12345<<10)
	}
	if _, err := vmRSS([]byte("Name:\tsdnlb\n")); err == nil {
		t.Error("vmRSS of a status without VmRSS: no error")
	}

	const metrics = "# HELP go_memstats_heap_inuse_bytes Number of heap bytes that are in use.\n" +
		"# TYPE go_memstats_heap_inuse_bytes gauge\ngo_memstats_heap_inuse_bytes 8.73984e+06\n" +
		"process_resident_memory_bytes_total{x=\"y\"} 1\nprocess_resident_memory_bytes{node=\"a b\"} 4.5056e+07\n"
	var topology string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/metrics":
			io.WriteString(w, metrics)
		case "/v1/topology":
			io.WriteString(w, topology)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	p := remoteProbe{newAPIClient(mustConfig(t, "-controller", "127.0.0.1:1", "-api", srv.URL, "-token", "s3cret"))}
	m, err := p.memory(context.Background())
	if err != nil || m.RSSBytes != 45056000 || m.HeapBytes != 8739840 {
		t.Errorf("memory = %+v, %v; want RSS 45056000 and heap 8739840", m, err)
	}

	topology = `{"switches":[],"links":[{"src":{"dpid":"5d:b0:00:00:00:00:00:01","port":1000},"dst":{"dpid":"5d:b0:00:00:00:00:00:02","port":1000}}],"hosts":[]}`
	top, err := p.topology(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w := newWiring(topoRing, 4, 0)
	if n, missing := shown(top, w.directed()); n != 1 || !strings.HasPrefix(missing, "5d:b0:00:00:00:00:00:01/1001>") {
		t.Errorf("shown = %d, missing %q; want 1 of 12, the next one missing", n, missing)
	}
}
