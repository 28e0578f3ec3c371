package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/mock"
)

// A 401 says what to send: a header without the Bearer scheme (a bare
// token, as pasted into Swagger UI's Authorize dialog) is told to put
// "Bearer " before it. The answer never repeats what was sent.
func TestServer_AuthSaysWhatToSend(t *testing.T) {
	ts := MustServe(t, &Server{Token: "s3cret", VIPService: &mock.VIPService{}})
	for header, want := range map[string]string{
		"":                           "Authorization: Bearer <token>",
		"Authorization: s3cret":      `"Bearer <token>"`,
		"Authorization: Token guess": `"Bearer <token>"`,
		"Authorization: Bearer nope": "the bearer token is wrong",
	} {
		resp := testRequest(t, ts, "DELETE", "/v1/vips/v", "", header)
		assertError(t, resp, http.StatusUnauthorized, sdnlb.EUNAUTHORIZED, "")
		var body errorResponse
		_ = json.Unmarshal(resp.Body, &body)
		if !strings.Contains(body.Error.Message, want) {
			t.Errorf("%q: message %q, want one with %q", header, body.Error.Message, want)
		}
		for _, sent := range []string{"s3cret", "guess", "nope"} {
			if strings.Contains(string(resp.Body), sent) {
				t.Errorf("%q: the answer repeats %q: %s", header, sent, resp.Body)
			}
		}
	}
}

func TestServer_Auth(t *testing.T) {
	vips := &mock.VIPService{
		FindVIPsFn:  func(ctx context.Context, f sdnlb.VIPFilter) ([]*sdnlb.VIP, error) { return nil, nil },
		DeleteVIPFn: func(ctx context.Context, id string, cascade bool) error { return nil },
	}
	tests := []struct {
		name      string
		token     string
		authReads bool
		method    string
		header    string
		status    int
	}{
		{"NoTokenConfiguredWriteOK", "", false, "DELETE", "", 204},
		{"WriteWithoutToken", "s3cret", false, "DELETE", "", 401},
		{"WriteWrongToken", "s3cret", false, "DELETE", "Authorization: Bearer s3cre", 401},
		{"WriteBasicScheme", "s3cret", false, "DELETE", "Authorization: Basic s3cret", 401},
		{"WriteBareToken", "s3cret", false, "DELETE", "Authorization: s3cret", 401},
		{"WriteWithToken", "s3cret", false, "DELETE", "Authorization: Bearer s3cret", 204},
		{"ReadOpenByDefault", "s3cret", false, "GET", "", 200},
		{"ReadClosedWithAuthReads", "s3cret", true, "GET", "", 401},
		{"ReadWithTokenAndAuthReads", "s3cret", true, "GET", "Authorization: Bearer s3cret", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deleted := false
			vips.DeleteVIPFn = func(ctx context.Context, id string, cascade bool) error { deleted = true; return nil }
			ts := MustServe(t, &Server{VIPService: vips, Token: tt.token, AuthReads: tt.authReads})
			path := "/v1/vips"
			if tt.method == "DELETE" {
				path = "/v1/vips/1"
			}
			var headers []string
			if tt.header != "" {
				headers = append(headers, tt.header)
			}
			resp := testRequest(t, ts, tt.method, path, "", headers...)
			if tt.status == 401 {
				assertError(t, resp, 401, sdnlb.EUNAUTHORIZED, "")
				if resp.Header.Get("WWW-Authenticate") == "" {
					t.Error("no WWW-Authenticate")
				}
				if deleted {
					t.Error("DeleteVIP called without a valid token")
				}
			} else if resp.Status != tt.status {
				t.Errorf("status %d, want %d: %s", resp.Status, tt.status, resp.Body)
			}
		})
	}
	t.Run("ProbesStayOpen", func(t *testing.T) {
		ts := MustServe(t, &Server{Token: "s3cret", AuthReads: true})
		for _, p := range []string{"/healthz", "/readyz"} {
			if resp := testRequest(t, ts, "GET", p, ""); resp.Status != 200 {
				t.Errorf("%s: %d", p, resp.Status)
			}
		}
	})
}

func TestServer_Routing(t *testing.T) {
	ts := MustServe(t, &Server{VIPService: &mock.VIPService{}})
	t.Run("ErrUnknownPath", func(t *testing.T) {
		assertError(t, testRequest(t, ts, "GET", "/v2/vips", ""), 404, sdnlb.ENOTFOUND, "")
	})
	t.Run("ErrMethodNotAllowed", func(t *testing.T) {
		assertError(t, testRequest(t, ts, "PATCH", "/v1/vips", `{}`), 405, codeMethodNotAllowed, "")
	})
}

func TestServer_Probes(t *testing.T) {
	tests := []struct {
		name   string
		ready  func(context.Context) error
		path   string
		status int
	}{
		{"Healthz", nil, "/healthz", 200},
		{"ReadyNil", nil, "/readyz", 200},
		{"Ready", func(context.Context) error { return nil }, "/readyz", 200},
		{"ErrNotReady", func(context.Context) error { return errors.New("db closed") }, "/readyz", 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := MustServe(t, &Server{Ready: tt.ready})
			resp := testRequest(t, ts, "GET", tt.path, "")
			if tt.status == 503 {
				assertError(t, resp, 503, sdnlb.EUNAVAILABLE, "")
				return
			}
			var body statusResponse
			decodeBody(t, resp, 200, &body)
			if body.Status != "ok" {
				t.Errorf("body %s", resp.Body)
			}
		})
	}
}

func TestServer_Recoverer(t *testing.T) {
	vips := &mock.VIPService{FindVIPByIDFn: func(ctx context.Context, id string) (*sdnlb.VIP, error) {
		panic("boom: secret detail")
	}}
	var logs syncBuffer
	ts := MustServe(t, &Server{VIPService: vips, Logger: newTestLogger(&logs)})
	resp := testRequest(t, ts, "GET", "/v1/vips/1", "")
	assertError(t, resp, 500, sdnlb.EINTERNAL, "")
	if strings.Contains(string(resp.Body), "secret") {
		t.Errorf("body leaks the panic: %s", resp.Body)
	}
	if !strings.Contains(logs.String(), "boom: secret detail") {
		t.Errorf("panic not logged: %s", logs.String())
	}
	// The server survives.
	if resp := testRequest(t, ts, "GET", "/healthz", ""); resp.Status != 200 {
		t.Errorf("healthz after panic: %d", resp.Status)
	}
}

func TestServer_RequestLog(t *testing.T) {
	vips := &mock.VIPService{FindVIPByIDFn: func(ctx context.Context, id string) (*sdnlb.VIP, error) {
		return &sdnlb.VIP{ID: id}, nil
	}}
	var logs syncBuffer
	ts := MustServe(t, &Server{VIPService: vips, Logger: newTestLogger(&logs)})
	testRequest(t, ts, "GET", "/v1/vips/abc", "", "X-Request-Id: rid-7")
	deadline := time.Now().Add(2 * time.Second)
	for !strings.Contains(logs.String(), "request_id=rid-7") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	line := logs.String()
	for _, want := range []string{"method=GET", "path=/v1/vips/abc", "route=/v1/vips/{id}", "status=200", "duration=", "request_id=rid-7", "component=api"} {
		if !strings.Contains(line, want) {
			t.Errorf("request log lacks %q: %s", want, line)
		}
	}
}

func TestServer_Metrics(t *testing.T) {
	vips := &mock.VIPService{FindVIPByIDFn: func(ctx context.Context, id string) (*sdnlb.VIP, error) {
		return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "no VIP %s", id)
	}}
	t.Run("ByRoutePattern", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		ts := MustServe(t, &Server{VIPService: vips, Registry: reg})
		testRequest(t, ts, "GET", "/v1/vips/a", "")
		testRequest(t, ts, "GET", "/v1/vips/b", "")
		resp := testRequest(t, ts, "GET", "/metrics", "")
		if resp.Status != 200 {
			t.Fatalf("metrics: %d", resp.Status)
		}
		want := `sdnlb_http_requests_total{code="404",method="GET",route="/v1/vips/{id}"} 2`
		if !strings.Contains(string(resp.Body), want) {
			t.Errorf("metrics lack %q:\n%s", want, resp.Body)
		}
		if !strings.Contains(string(resp.Body), `sdnlb_http_request_duration_seconds_count{method="GET",route="/v1/vips/{id}"} 2`) {
			t.Errorf("no duration histogram:\n%s", resp.Body)
		}
	})
	t.Run("TwoHandlersOneRegistry", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		s := &Server{VIPService: vips, Registry: reg}
		s.Handler()
		MustServe(t, s) // must not panic on duplicate registration
	})
	t.Run("LabelledRegistry", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		labelled := struct {
			prometheus.Registerer
			prometheus.Gatherer
		}{prometheus.WrapRegistererWith(prometheus.Labels{"node": "a"}, reg), reg}
		s := &Server{VIPService: vips, Registry: labelled}
		s.Handler()
		ts := MustServe(t, s) // registers again through the wrapper: must not panic
		testRequest(t, ts, "GET", "/v1/vips/a", "")
		resp := testRequest(t, ts, "GET", "/metrics", "")
		if want := `sdnlb_http_requests_total{code="404",method="GET",node="a",route="/v1/vips/{id}"} 1`; !strings.Contains(string(resp.Body), want) {
			t.Errorf("metrics lack %q:\n%s", want, resp.Body)
		}
	})
	t.Run("NoRegistryNoMetrics", func(t *testing.T) {
		ts := MustServe(t, &Server{})
		assertError(t, testRequest(t, ts, "GET", "/metrics", ""), 404, sdnlb.ENOTFOUND, "")
	})
}

func TestServer_Switches(t *testing.T) {
	switches := &mock.SwitchService{
		SwitchesFn: func(ctx context.Context) ([]*sdnlb.Switch, error) {
			return []*sdnlb.Switch{{DPID: "00:00:00:00:00:00:00:01", Ports: []sdnlb.SwitchPort{{No: 1, Name: "veth1", Up: true}}}}, nil
		},
		SwitchFlowsFn: func(ctx context.Context, dpid string) ([]*sdnlb.Flow, error) {
			if dpid != "00:00:00:00:00:00:00:01" {
				return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "no switch %s", dpid)
			}
			return []*sdnlb.Flow{{Cookie: "0x1", Priority: 100, Match: "tcp", Actions: "output:2"}}, nil
		},
	}
	stats := &mock.StatsService{PoolStatsFn: func(ctx context.Context, id string) (*sdnlb.PoolStats, error) {
		if id != "p1" {
			return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "no pool %s", id)
		}
		return &sdnlb.PoolStats{PoolID: "p1", BytesIn: 10, BytesOut: 20, ActiveConnections: 3, Members: []sdnlb.MemberStats{}}, nil
	}}
	ts := MustServe(t, &Server{SwitchService: switches, StatsService: stats})
	t.Run("List", func(t *testing.T) {
		var l switchList
		decodeBody(t, testRequest(t, ts, "GET", "/v1/switches", ""), 200, &l)
		if len(l.Switches) != 1 || l.Switches[0].Ports[0].Name != "veth1" {
			t.Errorf("got %+v", l)
		}
	})
	t.Run("Flows", func(t *testing.T) {
		var l flowList
		decodeBody(t, testRequest(t, ts, "GET", "/v1/switches/00:00:00:00:00:00:00:01/flows", ""), 200, &l)
		if len(l.Flows) != 1 || l.Flows[0].Actions != "output:2" {
			t.Errorf("got %+v", l)
		}
	})
	t.Run("ErrFlowsUnknownSwitch", func(t *testing.T) {
		assertError(t, testRequest(t, ts, "GET", "/v1/switches/00:00:00:00:00:00:00:09/flows", ""), 404, sdnlb.ENOTFOUND, "")
	})
	t.Run("Stats", func(t *testing.T) {
		var st sdnlb.PoolStats
		decodeBody(t, testRequest(t, ts, "GET", "/v1/pools/p1/stats", ""), 200, &st)
		if st.BytesIn != 10 || st.ActiveConnections != 3 {
			t.Errorf("got %+v", st)
		}
	})
	t.Run("ErrStatsUnknownPool", func(t *testing.T) {
		assertError(t, testRequest(t, ts, "GET", "/v1/pools/p9/stats", ""), 404, sdnlb.ENOTFOUND, "")
	})
	t.Run("ErrNoController", func(t *testing.T) {
		ts := MustServe(t, &Server{})
		for _, p := range []string{"/v1/switches", "/v1/switches/1/flows", "/v1/pools/p1/stats"} {
			assertError(t, testRequest(t, ts, "GET", p, ""), 503, sdnlb.EUNAVAILABLE, "")
		}
	})
}

func TestServer_Events(t *testing.T) {
	events := make(chan sdnlb.Event, 4)
	unsubscribed := make(chan struct{})
	feed := &mock.EventService{SubscribeFn: func() (<-chan sdnlb.Event, func()) {
		return events, func() { close(unsubscribed) }
	}}
	s := &Server{EventService: feed, heartbeat: 20 * time.Millisecond}
	ts := MustServe(t, s)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/events", nil)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	events <- sdnlb.Event{Seq: 7, Kind: sdnlb.KindVIP, Op: sdnlb.OpCreate, ID: "v1", At: at}
	events <- sdnlb.Event{Seq: 9, Op: sdnlb.OpResync, At: at}

	rd := bufio.NewReader(resp.Body)
	var frames []map[string]string
	heartbeats := 0
	frame := map[string]string{}
	for len(frames) < 2 || heartbeats == 0 {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v (frames %v)", err, frames)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if len(frame) > 0 {
				frames = append(frames, frame)
				frame = map[string]string{}
			}
		case strings.HasPrefix(line, ":"):
			heartbeats++
		default:
			k, v, _ := strings.Cut(line, ": ")
			frame[k] = v
		}
	}
	if frames[0]["event"] != "vip" || frames[0]["id"] != "7" || frames[1]["event"] != "resync" {
		t.Errorf("frames %v", frames)
	}
	var ev sdnlb.Event
	if err := json.Unmarshal([]byte(frames[0]["data"]), &ev); err != nil || ev.ID != "v1" || ev.Op != sdnlb.OpCreate || !ev.At.Equal(at) {
		t.Errorf("data %q: %+v %v", frames[0]["data"], ev, err)
	}

	cancel() // the client goes away: the handler must unsubscribe
	select {
	case <-unsubscribed:
	case <-time.After(2 * time.Second):
		t.Fatal("the handler did not unsubscribe after the client left")
	}
}

// Swagger UI and the spec load without the token, even with --auth-reads,
// so that the page can offer Authorize; the data needs the token.
func TestServer_Swagger(t *testing.T) {
	ts := MustServe(t, &Server{Token: "s3cret", AuthReads: true, VIPService: &mock.VIPService{}})
	tests := []struct {
		name, path  string
		status      int
		contentType string
		contains    string
	}{
		{"Index", "/swagger/index.html", 200, "text/html", "swagger-ui"},
		{"Spec", "/swagger/doc.json", 200, "application/json", `"/v1/vips"`},
		{"EmbeddedAsset", "/swagger/swagger-ui-bundle.js", 200, "application/javascript", "SwaggerUI"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := testRequest(t, ts, "GET", tt.path, "")
			if resp.Status != tt.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), tt.contentType) {
				t.Fatalf("status %d, Content-Type %q", resp.Status, resp.Header.Get("Content-Type"))
			}
			if !strings.Contains(string(resp.Body), tt.contains) {
				t.Errorf("body lacks %q", tt.contains)
			}
		})
	}
	t.Run("OffersAuthorize", func(t *testing.T) {
		var spec struct {
			SecurityDefinitions map[string]struct{ In, Name string }
			Paths               map[string]map[string]struct{ Security []map[string][]string }
		}
		if err := json.Unmarshal(testRequest(t, ts, "GET", "/swagger/doc.json", "").Body, &spec); err != nil {
			t.Fatal(err)
		}
		if b := spec.SecurityDefinitions["Bearer"]; b.In != "header" || b.Name != "Authorization" {
			t.Errorf("securityDefinitions.Bearer = %+v", b)
		}
		// The token is optional: a server without one takes requests without it.
		want := []map[string][]string{{}, {"Bearer": {}}}
		if got := spec.Paths["/v1/vips"]["post"].Security; !reflect.DeepEqual(got, want) {
			t.Errorf("POST /v1/vips security = %v, want %v", got, want)
		}
	})
	t.Run("DataNeedsToken", func(t *testing.T) {
		assertError(t, testRequest(t, ts, "GET", "/v1/vips", ""), http.StatusUnauthorized, sdnlb.EUNAUTHORIZED, "")
	})
	t.Run("RootRedirects", func(t *testing.T) {
		client := *ts.Client()
		client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := client.Get(ts.URL + "/swagger/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/swagger/index.html" {
			t.Errorf("status %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
	})
}

func TestServer_RequestID(t *testing.T) {
	ts := MustServe(t, &Server{})
	tests := []struct {
		name, sent string
		echoed     bool
	}{
		{"ClientIDEchoed", "abc-123", true},
		{"TooLongReplaced", strings.Repeat("a", 129), false},
		{"SpaceReplaced", "a b", false},
		{"NoneGenerated", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var headers []string
			if tt.sent != "" {
				headers = append(headers, "X-Request-Id: "+tt.sent)
			}
			got := testRequest(t, ts, "GET", "/healthz", "", headers...).Header.Get("X-Request-Id")
			if got == "" || (got == tt.sent) != tt.echoed {
				t.Errorf("X-Request-Id %q for %q", got, tt.sent)
			}
		})
	}
}

func TestServer_MetricsCountPanics(t *testing.T) {
	vips := &mock.VIPService{FindVIPsFn: func(ctx context.Context, f sdnlb.VIPFilter) ([]*sdnlb.VIP, error) { panic("boom") }}
	reg := prometheus.NewRegistry()
	ts := MustServe(t, &Server{VIPService: vips, Registry: reg})
	testRequest(t, ts, "GET", "/v1/vips", "")
	body := string(testRequest(t, ts, "GET", "/metrics", "").Body)
	if want := `sdnlb_http_requests_total{code="500",method="GET",route="/v1/vips"} 1`; !strings.Contains(body, want) {
		t.Errorf("metrics lack %q:\n%s", want, body)
	}
}

func TestServer_Cluster(t *testing.T) {
	seen := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var fail error
	svc := &mock.LeaseService{ClusterFn: func(ctx context.Context) (*sdnlb.Cluster, error) {
		if fail != nil {
			return nil, fail
		}
		return &sdnlb.Cluster{Leader: "a", Nodes: []*sdnlb.ClusterNode{
			{ID: "a", APIAddr: "10.0.0.1:8080", OpenFlowAddr: "10.0.0.1:6653", Role: sdnlb.RoleLeader, LastSeen: seen,
				Masters: []string{"00:00:00:00:00:00:00:01"}},
			{ID: "b", APIAddr: "10.0.0.2:8080", OpenFlowAddr: "10.0.0.2:6653", Role: sdnlb.RoleFollower, LastSeen: seen},
		}}, nil
	}}
	ts := MustServe(t, &Server{ClusterService: svc, NodeID: "b"})
	t.Run("OK", func(t *testing.T) {
		res := testRequest(t, ts, "GET", "/v1/cluster", "")
		want := `{"leader":"a","self":"b","nodes":[` +
			`{"id":"a","api_addr":"10.0.0.1:8080","openflow_addr":"10.0.0.1:6653","role":"leader","last_seen":"2026-01-02T03:04:05Z","masters":["00:00:00:00:00:00:00:01"],"stats_recorded_at":null,"topology_recorded_at":null},` +
			`{"id":"b","api_addr":"10.0.0.2:8080","openflow_addr":"10.0.0.2:6653","role":"follower","last_seen":"2026-01-02T03:04:05Z","masters":[],"stats_recorded_at":null,"topology_recorded_at":null}]}`
		if res.Status != 200 || strings.TrimSpace(string(res.Body)) != want {
			t.Fatalf("status %d, body %s\nwant %s", res.Status, res.Body, want)
		}
	})
	t.Run("ErrUnavailable", func(t *testing.T) {
		fail = sdnlb.Errorf(sdnlb.EUNAVAILABLE, "the database is unavailable")
		defer func() { fail = nil }()
		assertError(t, testRequest(t, ts, "GET", "/v1/cluster", ""), 503, sdnlb.EUNAVAILABLE, "")
	})
	t.Run("ErrNoCluster", func(t *testing.T) {
		ts := MustServe(t, &Server{})
		assertError(t, testRequest(t, ts, "GET", "/v1/cluster", ""), 503, sdnlb.EUNAVAILABLE, "")
	})
}

// TestServer_TopologyBounded: a topology grown by forged links and hosts
// (as a cluster's merged parts can be, every node within its caps) is
// answered bounded, saying how much it left out.
func TestServer_TopologyBounded(t *testing.T) {
	const n = 100_000
	full := &sdnlb.Topology{Switches: []*sdnlb.TopologySwitch{}, Paths: []*sdnlb.Path{}}
	for i := range n {
		full.Links = append(full.Links, &sdnlb.Link{Src: sdnlb.LinkEnd{DPID: "00:00:00:00:00:00:00:01", Port: uint32(i)},
			Dst: sdnlb.LinkEnd{DPID: "00:00:00:00:00:00:00:02", Port: uint32(i)}})
		full.Hosts = append(full.Hosts, &sdnlb.Host{Address: fmt.Sprintf("10.%d.%d.%d", i>>16, i>>8&0xff, i&0xff),
			MAC: "02:00:00:00:00:05", DPID: "00:00:00:00:00:00:00:02", Port: "3"})
	}
	unbounded, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	ts := MustServe(t, &Server{TopologyService: &mock.TopologyService{TopologyFn: func(ctx context.Context) (*sdnlb.Topology, error) {
		top := *full
		return &top, nil
	}}})
	for _, tc := range []struct {
		query string
		limit int
	}{{"", 1000}, {"?limit=10", 10}} {
		resp := testRequest(t, ts, "GET", "/v1/topology"+tc.query, "")
		var top sdnlb.Topology
		decodeBody(t, resp, 200, &top)
		if len(top.Links) != tc.limit || len(top.Hosts) != tc.limit || top.Omitted != (sdnlb.TopologyOmitted{Links: n - tc.limit, Hosts: n - tc.limit}) {
			t.Errorf("%s: %d links, %d hosts, omitted %+v", tc.query, len(top.Links), len(top.Hosts), top.Omitted)
		}
		if len(resp.Body) > 512<<10 {
			t.Errorf("%s: %d bytes", tc.query, len(resp.Body))
		}
		t.Logf("%d links and %d hosts: %d bytes unbounded, %d with%s", n, n, len(unbounded), len(resp.Body), tc.query)
	}
}

func TestServer_Topology(t *testing.T) {
	topology := &mock.TopologyService{TopologyFn: func(ctx context.Context) (*sdnlb.Topology, error) {
		return &sdnlb.Topology{
			Switches: []*sdnlb.TopologySwitch{{DPID: "00:00:00:00:00:00:00:01", Ports: []sdnlb.SwitchPort{{No: 1, Up: true}}}},
			Links: []*sdnlb.Link{{Src: sdnlb.LinkEnd{DPID: "00:00:00:00:00:00:00:01", Port: 1},
				Dst: sdnlb.LinkEnd{DPID: "00:00:00:00:00:00:00:02", Port: 2}}},
			Hosts: []*sdnlb.Host{{Address: "10.0.0.5", MAC: "02:00:00:00:00:05", DPID: "00:00:00:00:00:00:00:02", Port: "3"}},
		}, nil
	}}
	t.Run("OK", func(t *testing.T) {
		ts := MustServe(t, &Server{TopologyService: topology})
		var top sdnlb.Topology
		decodeBody(t, testRequest(t, ts, "GET", "/v1/topology", ""), 200, &top)
		if len(top.Links) != 1 || top.Links[0].Dst.Port != 2 || len(top.Hosts) != 1 || top.Hosts[0].Port != "3" || len(top.Switches) != 1 {
			t.Errorf("got %+v", top)
		}
	})
	t.Run("ErrNoController", func(t *testing.T) {
		ts := MustServe(t, &Server{})
		assertError(t, testRequest(t, ts, "GET", "/v1/topology", ""), 503, sdnlb.EUNAVAILABLE, "")
	})
	t.Run("ErrLimit", func(t *testing.T) {
		ts := MustServe(t, &Server{TopologyService: topology})
		for _, q := range []string{"0", "1001", "x"} {
			assertError(t, testRequest(t, ts, "GET", "/v1/topology?limit="+q, ""), 400, sdnlb.EINVALID, "limit")
		}
	})
	t.Run("ErrAuthReads", func(t *testing.T) {
		ts := MustServe(t, &Server{TopologyService: topology, Token: "s3cret", AuthReads: true})
		assertError(t, testRequest(t, ts, "GET", "/v1/topology", ""), 401, sdnlb.EUNAUTHORIZED, "")
	})
}
