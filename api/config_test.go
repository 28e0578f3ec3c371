package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/mock"
)

// applyRecorder is a ConfigApplyService that records what it was asked
// and answers diff.
type applyRecorder struct {
	calls int
	ctx   context.Context // the apply's, which the store hands CheckVIP
	want  *sdnlb.Config
	opts  sdnlb.ApplyOptions
	err   error
}

func (a *applyRecorder) service() *mock.ConfigApplyService {
	return &mock.ConfigApplyService{ApplyConfigFn: func(ctx context.Context, want *sdnlb.Config, opts sdnlb.ApplyOptions) (*sdnlb.ConfigDiff, error) {
		a.calls++
		a.ctx, a.want, a.opts = ctx, want, opts
		if a.err != nil {
			return nil, a.err
		}
		return &sdnlb.ConfigDiff{DryRun: opts.DryRun, Changed: true,
			VIPs: sdnlb.KindDiff{Created: []sdnlb.ObjectDiff{{ID: "web"}}}}, nil
	}}
}

// configServer serves store with rec as its ConfigApplyService.
func configServer(tb testing.TB, store *memStore, rec *applyRecorder) *Server {
	tb.Helper()
	srv := store.server()
	srv.ConfigApplyService = rec.service()
	return srv
}

const configJSON = `{
	"monitors": [{"id": "http", "type": "HTTP", "url_path": "/health"}],
	"vips": [{"id": "web", "address": "10.0.0.100", "port": 80}],
	"pools": [{"name": "web", "vip_id": "web", "lb_method": "LEAST_CONNECTIONS", "monitor_ids": ["http"]}],
	"members": [{"pool_id": "web", "address": "10.0.0.1", "port": 8080}]
}`

const configYAML = `# the same document
monitors:
- {id: http, type: HTTP, url_path: /health}
vips:
- id: web
  address: 10.0.0.100
  port: 80
pools:
- name: web
  vip_id: web
  lb_method: LEAST_CONNECTIONS
  monitor_ids: [http]
members:
- pool_id: web
  address: 10.0.0.1
  port: 8080
`

// The document reaches the service as the objects POSTs of them would
// create, defaults filled in, from JSON and from YAML alike.
func TestServer_ConfigApply(t *testing.T) {
	wantMonitor := sdnlb.NewMonitor()
	wantMonitor.ID, wantMonitor.Type, wantMonitor.URLPath = "http", sdnlb.MonitorHTTP, "/health"
	wantVIP := sdnlb.NewVIP()
	wantVIP.ID, wantVIP.Address, wantVIP.Port = "web", "10.0.0.100", 80
	wantPool := sdnlb.NewPool()
	// A method the switch cannot pick by takes CONTROLLER dispatch, as on POST.
	wantPool.Name, wantPool.VIPID, wantPool.LBMethod, wantPool.Dispatch = "web", "web", sdnlb.LeastConnections, sdnlb.DispatchController
	wantPool.MonitorIDs = []string{"http"}
	wantMember := sdnlb.NewMember()
	wantMember.PoolID, wantMember.Address, wantMember.Port = "web", "10.0.0.1", 8080
	want := &sdnlb.Config{VIPs: []*sdnlb.VIP{wantVIP}, Pools: []*sdnlb.Pool{wantPool},
		Members: []*sdnlb.Member{wantMember}, Monitors: []*sdnlb.Monitor{wantMonitor}}

	for _, tc := range []struct {
		name, path, body, contentType string
		opts                          sdnlb.ApplyOptions
	}{
		{"JSON", "/v1/config", configJSON, "application/json", sdnlb.ApplyOptions{}},
		{"YAML", "/v1/config?prune=true", configYAML, "application/yaml", sdnlb.ApplyOptions{Prune: true}},
		{"YAMLCharset", "/v1/config?dry_run=1", configYAML, "application/x-yaml; charset=utf-8", sdnlb.ApplyOptions{DryRun: true}},
		{"JSONAsYAML", "/v1/config?prune=true&dry_run=true", configJSON, "application/yaml", sdnlb.ApplyOptions{Prune: true, DryRun: true}},
		// Document markers around the one document, as editors and
		// generators write them, are not a second document.
		{"YAMLMarkers", "/v1/config", "---\n" + configYAML + "---\n# the end\n", "application/yaml", sdnlb.ApplyOptions{}},
		{"YAMLEndMarker", "/v1/config", configYAML + "...\n", "application/yaml", sdnlb.ApplyOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &applyRecorder{}
			ts := MustServe(t, configServer(t, newMemStore(), rec))
			resp := testRequest(t, ts, "PUT", tc.path, tc.body, "Content-Type: "+tc.contentType)
			var diff sdnlb.ConfigDiff
			decodeBody(t, resp, http.StatusOK, &diff)
			if !diff.Changed || diff.DryRun != tc.opts.DryRun || len(diff.VIPs.Created) != 1 {
				t.Errorf("diff %+v", diff)
			}
			if rec.opts.Prune != tc.opts.Prune || rec.opts.DryRun != tc.opts.DryRun || rec.opts.CheckVIP == nil {
				t.Errorf("options %+v, want %+v with the VIP check", rec.opts, tc.opts)
			}
			if !reflect.DeepEqual(rec.want, want) {
				got, _ := json.Marshal(rec.want)
				wantJSON, _ := json.Marshal(want)
				t.Errorf("declared\n got %s\nwant %s", got, wantJSON)
			}
		})
	}
}

// A document the API cannot read reaches no store, and the error names
// the object by its path in the document and the field.
func TestServer_ConfigApplyRefused(t *testing.T) {
	rec := &applyRecorder{}
	srv := configServer(t, newMemStore(), rec)
	yaml := "Content-Type: application/yaml"
	cases := []routeCase{
		{name: "ErrUnknownField", method: "PUT", path: "/v1/config", body: `{"vips":[{"id":"a","address":"10.0.0.1"},{"id":"b","adress":"10.0.0.2"}]}`,
			status: 400, code: sdnlb.EINVALID, field: "vips[1].adress"},
		{name: "ErrReadOnly", method: "PUT", path: "/v1/config", body: `{"members":[{"pool_id":"p","address":"10.0.0.1","status":"UP"}]}`,
			status: 400, code: sdnlb.EINVALID, field: "members[0].status"},
		{name: "ErrVIPPoolID", method: "PUT", path: "/v1/config", body: `{"vips":[{"id":"a","address":"10.0.0.1","pool_id":"p"}]}`,
			status: 400, code: sdnlb.EINVALID, field: "vips[0].pool_id"},
		{name: "ErrMonitorPoolIDs", method: "PUT", path: "/v1/config", body: `{"monitors":[{"id":"h","pool_ids":["p"]}]}`,
			status: 400, code: sdnlb.EINVALID, field: "monitors[0].pool_ids"},
		{name: "ErrType", method: "PUT", path: "/v1/config", body: `{"pools":[{"id":"p"},{"id":"q","admin_state_up":"yes"}]}`,
			status: 400, code: sdnlb.EINVALID, field: "pools[1].admin_state_up"},
		{name: "ErrNestedType", method: "PUT", path: "/v1/config", body: `{"vips":[{"id":"a","session_persistence":{"type":"SOURCE_IP","timeout":"60"}}]}`,
			status: 400, code: sdnlb.EINVALID, field: "vips[0].session_persistence.timeout"},
		{name: "ErrIntegerExponent", method: "PUT", path: "/v1/config", body: `{"members":[{"pool_id":"p","address":"10.0.0.1","weight":1e2}]}`,
			status: 400, code: sdnlb.EINVALID, field: "members[0].weight"},
		{name: "ErrNullObject", method: "PUT", path: "/v1/config", body: `{"vips":[null]}`,
			status: 400, code: sdnlb.EINVALID, field: "vips[0]"},
		{name: "ErrNotAnObject", method: "PUT", path: "/v1/config", body: `{"members":["m1"]}`,
			status: 400, code: sdnlb.EINVALID, field: "members[0]"},
		{name: "ErrNotAList", method: "PUT", path: "/v1/config", body: `{"vips":{"id":"a"}}`,
			status: 400, code: sdnlb.EINVALID, field: "vips"},
		{name: "ErrUnknownList", method: "PUT", path: "/v1/config", body: `{"vips":[],"things":[]}`,
			status: 400, code: sdnlb.EINVALID, field: "things"},
		{name: "ErrNullBody", method: "PUT", path: "/v1/config", body: `null`, status: 400, code: sdnlb.EINVALID},
		{name: "ErrEmptyYAML", method: "PUT", path: "/v1/config", body: "# nothing\n", headers: []string{yaml}, status: 400, code: sdnlb.EINVALID},
		{name: "ErrTwoValues", method: "PUT", path: "/v1/config", body: `{} {}`, status: 400, code: sdnlb.EINVALID},
		{name: "ErrBadYAML", method: "PUT", path: "/v1/config", body: "vips: [\n", headers: []string{yaml}, status: 400, code: sdnlb.EINVALID},
		{name: "ErrYAMLDuplicateKey", method: "PUT", path: "/v1/config", body: "vips:\n- id: a\n  id: b\n", headers: []string{yaml}, status: 400, code: sdnlb.EINVALID},
		{name: "ErrYAMLField", method: "PUT", path: "/v1/config", body: "members:\n- pool_id: p\n  address: 10.0.0.1\n  port: eighty\n", headers: []string{yaml},
			status: 400, code: sdnlb.EINVALID, field: "members[0].port"},
		// The conversion reads the first document only: applying it alone,
		// and with prune deleting what the second declares, is refused.
		{name: "ErrYAMLTwoDocuments", method: "PUT", path: "/v1/config?prune=true", body: configYAML + "---\nvips:\n- {id: api, address: 10.0.0.101}\n",
			headers: []string{yaml}, status: 400, code: sdnlb.EINVALID,
			check: mentions("holds 2 YAML documents")},
		{name: "ErrYAMLDocumentAfterEmpty", method: "PUT", path: "/v1/config", body: "---\n---\n" + configYAML, headers: []string{yaml}, status: 400, code: sdnlb.EINVALID,
			check: mentions("holds 2 YAML documents")},
		{name: "ErrYAMLBadSecondDocument", method: "PUT", path: "/v1/config", body: configYAML + "...\nvips: [\n", headers: []string{yaml}, status: 400, code: sdnlb.EINVALID,
			check: mentions("not valid YAML")},
		{name: "ErrYAMLInfinity", method: "PUT", path: "/v1/config", body: "monitors:\n- id: h\n  delay: .inf\n", headers: []string{yaml}, status: 400, code: sdnlb.EINVALID},
		{name: "ErrNotUTF8", method: "PUT", path: "/v1/config", body: "{\"vips\":[{\"id\":\"a\",\"name\":\"\xff\"}]}", status: 400, code: sdnlb.EINVALID},
		{name: "ErrPruneNotBool", method: "PUT", path: "/v1/config?prune=maybe", body: `{}`, status: 400, code: sdnlb.EINVALID, field: "prune"},
		{name: "ErrDryRunNotBool", method: "PUT", path: "/v1/config?dry_run=2", body: `{}`, status: 400, code: sdnlb.EINVALID, field: "dry_run"},
		{name: "ErrTextPlain", method: "PUT", path: "/v1/config", body: `{}`, headers: []string{"Content-Type: text/plain"}, status: 415, code: sdnlb.EUNSUPPORTED},
		{name: "ErrNoContentType", method: "PUT", path: "/v1/config", body: `{}`, headers: []string{"Content-Type:"}, status: 415, code: sdnlb.EUNSUPPORTED},
		{name: "ErrYAMLLatin1", method: "PUT", path: "/v1/config", body: `{}`, headers: []string{"Content-Type: application/yaml; charset=latin1"}, status: 415, code: sdnlb.EUNSUPPORTED},
		{name: "ErrCrossSite", method: "PUT", path: "/v1/config", body: `{}`, headers: []string{yaml, "Sec-Fetch-Site: cross-site"}, status: 403, code: sdnlb.EFORBIDDEN},
		{name: "ErrTooLarge", method: "PUT", path: "/v1/config", body: `{"vips":[{"name":"` + strings.Repeat("x", MaxConfigBodyBytes) + `"}]}`,
			status: 413, code: sdnlb.ETOOLARGE},
		// YAML is for whole configurations only.
		{name: "ErrYAMLVIP", method: "POST", path: "/v1/vips", body: "address: 10.0.0.5\n", headers: []string{yaml}, status: 415, code: sdnlb.EUNSUPPORTED},
		{name: "ErrYAMLFloodlight", method: "POST", path: "/quantum/v1.0/vips/", body: "address: 10.0.0.5\n", headers: []string{yaml}, status: 415, code: sdnlb.EUNSUPPORTED},
	}
	runRouteCases(t, srv, cases)
	if rec.calls != 0 {
		t.Errorf("the store was asked %d times", rec.calls)
	}

	// What the store refuses is answered as it says.
	rec.err = sdnlb.ConfigObjectError("members[0]", "m1", sdnlb.FieldErrorf(sdnlb.EINVALID, "port", "port must be 0-65535"))
	runRouteCases(t, srv, []routeCase{{name: "ErrFromStore", method: "PUT", path: "/v1/config",
		body:   `{"members":[{"id":"m1","pool_id":"p","address":"10.0.0.1","port":70000}]}`,
		status: 400, code: sdnlb.EINVALID, field: "members[0].port"}})
}

// mentions checks that an answer's body says want.
func mentions(want string) func(*testing.T, response) {
	return func(t *testing.T, resp response) {
		t.Helper()
		if !strings.Contains(string(resp.Body), want) {
			t.Errorf("the answer does not say %q: %s", want, resp.Body)
		}
	}
}

// A whole configuration may be larger than one object's 1 MiB.
func TestServer_ConfigApplyLarge(t *testing.T) {
	rec := &applyRecorder{}
	ts := MustServe(t, configServer(t, newMemStore(), rec))
	members := make([]string, 20000)
	for i := range members {
		members[i] = `{"pool_id":"web","address":"10.0.0.1","port":8080,"weight":1,"admin_state_up":true}`
	}
	body := `{"members":[` + strings.Join(members, ",") + `]}`
	if len(body) <= maxBodyBytes {
		t.Fatalf("the body is only %d bytes", len(body))
	}
	resp := testRequest(t, ts, "PUT", "/v1/config", body)
	if resp.Status != http.StatusOK || len(rec.want.Members) != len(members) {
		t.Fatalf("status %d: %.200s", resp.Status, resp.Body)
	}
}

// The export holds every field a client declares and none the store
// derives: declared again, each object is what the store holds.
func TestServer_ConfigExportRoundTrip(t *testing.T) {
	mon := sdnlb.NewMonitor()
	mon.ID, mon.Name, mon.Type, mon.Delay, mon.Timeout, mon.MaxRetries, mon.Rise = "h", "check", sdnlb.MonitorHTTPS, 3, 1.5, 4, 5
	mon.HTTPMethod, mon.URLPath, mon.ExpectedCodes, mon.TLSVerify, mon.AdminStateUp = "HEAD", "/ok", "200-204", true, false
	vip := sdnlb.NewVIP()
	vip.ID, vip.Name, vip.Description, vip.Address, vip.Protocol, vip.Port = "v", "web", "the site", "10.0.0.100", sdnlb.ProtocolUDP, 53
	vip.ConnectionLimit, vip.AdminStateUp = 100, false
	vip.SessionPersistence = &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP, Timeout: 30}
	other := sdnlb.NewVIP()
	other.ID, other.Address = "a-first", "10.0.0.101"
	pool := sdnlb.NewPool()
	pool.ID, pool.Name, pool.Description, pool.VIPID, pool.LBMethod, pool.Dispatch = "p", "dns", "resolvers", "v", sdnlb.WeightedLeastConnections, sdnlb.DispatchController
	pool.Forwarding, pool.Protocol, pool.AdminStateUp, pool.SlowStart = sdnlb.ForwardingDSR, sdnlb.ProtocolUDP, false, 12.5
	member := sdnlb.NewMember()
	member.ID, member.PoolID, member.Address, member.Port, member.Weight, member.AdminStateUp = "m", "p", "10.0.0.1", 53, 7, false
	member.Capacity = 250
	agent := sdnlb.NewMonitor()
	agent.ID, agent.Type, agent.Port = "a", sdnlb.MonitorAgent, 5555
	store := mustMemStore(t, mon, agent, vip, other, pool, member)
	if err := store.AssociateMonitor(context.Background(), "p", "h"); err != nil {
		t.Fatal(err)
	}
	rec := &applyRecorder{}
	ts := MustServe(t, configServer(t, store, rec))

	resp := testRequest(t, ts, "GET", "/v1/config", "")
	var doc map[string][]map[string]any
	decodeBody(t, resp, http.StatusOK, &doc)
	if ids := []any{doc["vips"][0]["id"], doc["vips"][1]["id"]}; !reflect.DeepEqual(ids, []any{"a-first", "v"}) {
		t.Errorf("vips in the order %v, want by id", ids)
	}
	if resp := testRequest(t, ts, "PUT", "/v1/config", string(resp.Body)); resp.Status != http.StatusOK {
		t.Fatalf("PUT the export: %d %s", resp.Status, resp.Body)
	}
	stored := mustConfig(t, store)
	assertSame := func(kind string, changes []sdnlb.FieldChange, storedID, declaredID string) {
		t.Helper()
		if len(changes) != 0 || storedID != declaredID {
			t.Errorf("%s %s declared again as %s differs: %+v", kind, storedID, declaredID, changes)
		}
	}
	for i, v := range stored.VIPs {
		assertSame("vip", v.Changes(rec.want.VIPs[i]), v.ID, rec.want.VIPs[i].ID)
	}
	for i, p := range stored.Pools {
		assertSame("pool", p.Changes(rec.want.Pools[i]), p.ID, rec.want.Pools[i].ID)
	}
	for i, m := range stored.Members {
		assertSame("member", m.Changes(rec.want.Members[i]), m.ID, rec.want.Members[i].ID)
	}
	for i, m := range stored.Monitors {
		assertSame("monitor", m.Changes(rec.want.Monitors[i]), m.ID, rec.want.Monitors[i].ID)
	}

	// An empty store exports empty lists.
	runRouteCases(t, configServer(t, newMemStore(), rec), []routeCase{{name: "Empty", method: "GET", path: "/v1/config",
		status: 200, want: `{"vips":[],"pools":[],"members":[],"monitors":[]}`}})
}

func TestServer_ConfigApplyUnavailable(t *testing.T) {
	runRouteCases(t, newMemStore().server(), []routeCase{{name: "ErrNoService", method: "PUT", path: "/v1/config", body: `{}`,
		status: 503, code: sdnlb.EUNAVAILABLE}})
}

// The apply asks about each VIP it writes as the single writes do: the
// store calls the check the API hands it.
func TestServer_ConfigApplyChecksLearnedHosts(t *testing.T) {
	rec := &applyRecorder{}
	srv := configServer(t, newMemStore(), rec)
	srv.HostService = &mock.HostService{FindHostFn: func(ctx context.Context, address string) (*sdnlb.Host, error) {
		if address == "10.0.0.5" {
			return &sdnlb.Host{Address: address, MAC: "cc:00:00:00:00:05", DPID: "00:00:00:00:00:00:00:01", Port: "LOCAL", LastSeen: time.Now()}, nil
		}
		return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "no host at %s", address)
	}}
	ts := MustServe(t, srv)
	decodeBody(t, testRequest(t, ts, "PUT", "/v1/config", configJSON), http.StatusOK, &sdnlb.ConfigDiff{})
	v := sdnlb.NewVIP()
	v.Address = "10.0.0.5"
	err := rec.opts.CheckVIP(context.Background(), nil, v)
	if sdnlb.ErrorCode(err) != sdnlb.ECONFLICT || sdnlb.ErrorField(err) != "address" || !strings.Contains(sdnlb.ErrorMessage(err), "port LOCAL") {
		t.Errorf("a VIP on a learned host's address: %v", err)
	}
	v.Address = "10.0.0.6"
	if err := rec.opts.CheckVIP(context.Background(), nil, v); err != nil {
		t.Errorf("a VIP on a free address: %v", err)
	}
	// A document applied with ?take_address=true takes the host's address.
	decodeBody(t, testRequest(t, ts, "PUT", "/v1/config?take_address=true", configJSON), http.StatusOK, &sdnlb.ConfigDiff{})
	v.Address = "10.0.0.5"
	if err := rec.opts.CheckVIP(rec.ctx, nil, v); err != nil {
		t.Errorf("a VIP taking a learned host's address: %v", err)
	}
}

// streamOf is a ConfigService whose export streams n members of pool p,
// then fails with err when it is not nil; after each member it calls
// onMember with how many it streamed.
func streamOf(n int, err error, onMember func(i int)) *mock.ConfigService {
	return &mock.ConfigService{ExportConfigFn: func(ctx context.Context, export func(*sdnlb.ConfigStream) error) error {
		members := func(yield func(*sdnlb.Member, error) bool) {
			for i := range n {
				m := sdnlb.NewMember()
				m.ID, m.PoolID, m.Address = fmt.Sprintf("m%06d", i), "p", fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
				if !yield(m, nil) {
					return
				}
				if onMember != nil {
					onMember(i + 1)
				}
			}
			if err != nil {
				yield(nil, err)
			}
		}
		return export(&sdnlb.ConfigStream{ETag: `"v1"`, VIPs: all[*sdnlb.VIP](nil), Pools: all[*sdnlb.Pool](nil),
			Members: members, Monitors: all[*sdnlb.Monitor](nil)})
	}}
}

// The export is sent while the store still reads it: the client has the
// first members before the last is read.
func TestServer_ConfigExportStreams(t *testing.T) {
	const n = 10_000 // some 800 KB, many times the stream's buffer
	rec := httptest.NewRecorder()
	sentEarly := false
	srv := &Server{ConfigService: streamOf(n, nil, func(i int) {
		if i == n/2 {
			sentEarly = rec.Body.Len() > 0
		}
	})}
	req := httptest.NewRequest("GET", "/v1/config", nil)
	req.Host = "127.0.0.1" // the API answers its own names only
	srv.Handler().ServeHTTP(rec, req)
	if !sentEarly {
		t.Error("nothing was sent before the store had read half the members")
	}
	var doc struct {
		Members []map[string]any `json:"members"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || len(doc.Members) != n {
		t.Fatalf("%d members, %v", len(doc.Members), err)
	}
	if got := doc.Members[n-1]["id"]; got != fmt.Sprintf("m%06d", n-1) {
		t.Errorf("the last member is %v", got)
	}
	if rec.Header().Get("ETag") != `"v1"` || rec.Header().Get("Content-Type") != "application/json; charset=utf-8" {
		t.Errorf("headers %v", rec.Header())
	}
}

// A store failure before the first bytes are sent is an error answer;
// after, the connection ends before the document does, so no client takes
// the part for the whole, and the failure is logged.
func TestServer_ConfigExportFails(t *testing.T) {
	var logs syncBuffer
	failure := errorString("disk I/O error")
	early := MustServe(t, &Server{ConfigService: streamOf(3, failure, nil), Logger: newTestLogger(&logs)})
	resp := testRequest(t, early, "GET", "/v1/config", "")
	assertError(t, resp, http.StatusInternalServerError, sdnlb.EINTERNAL, "")
	if resp.Header.Get("ETag") != "" {
		t.Error("the error answer has the export's ETag")
	}

	late := MustServe(t, &Server{ConfigService: streamOf(10_000, failure, nil), Logger: newTestLogger(&logs)})
	got, err := late.Client().Get(late.URL + "/v1/config")
	if err != nil {
		t.Fatal(err)
	}
	defer got.Body.Close()
	body, err := io.ReadAll(got.Body)
	if err == nil {
		t.Fatalf("the cut answer read as whole: status %d, %d bytes", got.StatusCode, len(body))
	}
	if !strings.Contains(logs.String(), "answer cut short") || !strings.Contains(logs.String(), "disk I/O error") {
		t.Errorf("the failure is not logged:\n%s", logs.String())
	}
}

// PUT /v1/config with If-Match goes ahead only on the version of the
// configuration GET /v1/config tagged; the store checks the tag in its
// transaction, as this fake does.
func TestServer_ConfigIfMatch(t *testing.T) {
	web, api := sdnlb.NewVIP(), sdnlb.NewVIP()
	web.ID, web.Address, api.ID, api.Address = "web", "10.0.0.100", "api", "10.0.0.101"
	store := mustMemStore(t, web)
	srv := store.server()
	applied := 0
	srv.ConfigApplyService = &mock.ConfigApplyService{ApplyConfigFn: func(ctx context.Context, want *sdnlb.Config, opts sdnlb.ApplyOptions) (*sdnlb.ConfigDiff, error) {
		if err := sdnlb.CheckConfigIfMatch(ctx, mustConfig(t, store)); err != nil {
			return nil, err
		}
		applied++
		return &sdnlb.ConfigDiff{}, nil
	}}
	ts := MustServe(t, srv)
	read := testRequest(t, ts, "GET", "/v1/config", "")
	etag := read.Header.Get("ETag")
	if etag == "" || strings.HasPrefix(etag, "W/") {
		t.Fatalf("the export's ETag is %q, want a strong one", etag)
	}
	doc := string(read.Body)
	if resp := testRequest(t, ts, "PUT", "/v1/config", doc, "If-Match: "+etag); resp.Status != http.StatusOK {
		t.Fatalf("PUT with the current ETag: %d %s", resp.Status, resp.Body)
	}
	if err := store.CreateVIP(context.Background(), api); err != nil { // another client's write
		t.Fatal(err)
	}
	runRouteCases(t, srv, []routeCase{
		{name: "ErrStale", method: "PUT", path: "/v1/config?prune=true", body: doc, headers: []string{"If-Match: " + etag},
			status: http.StatusPreconditionFailed, code: sdnlb.EPRECONDITION, check: mentions("the configuration changed since it was read")},
		{name: "Any", method: "PUT", path: "/v1/config", body: doc, headers: []string{"If-Match: *"}, status: http.StatusOK},
	})
	if applied != 2 {
		t.Errorf("%d applies went ahead, want 2", applied)
	}
	if now := testRequest(t, ts, "GET", "/v1/config", "").Header.Get("ETag"); now == etag {
		t.Error("a write left the export's ETag as it was")
	}
}
