package api

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/mock"
)

func TestVIPRoutes_Create(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		var got *sdnlb.VIP
		vips := &mock.VIPService{CreateVIPFn: func(ctx context.Context, v *sdnlb.VIP) error {
			got = v
			v.ID, v.MAC, v.Status = "generated", sdnlb.VIPMAC("generated"), sdnlb.VIPDown
			return nil
		}}
		ts := MustServe(t, &Server{VIPService: vips})
		resp := testRequest(t, ts, "POST", "/v1/vips", `{"name":"web","address":"10.0.0.100","port":80}`)
		var v sdnlb.VIP
		decodeBody(t, resp, http.StatusCreated, &v)
		if loc := resp.Header.Get("Location"); loc != "/v1/vips/generated" {
			t.Errorf("Location = %q", loc)
		}
		if v.ID != "generated" || v.Status != sdnlb.VIPDown || v.MAC == "" {
			t.Errorf("response %+v", v)
		}
		// Absent fields take the defaults of NewVIP.
		if got.Protocol != sdnlb.ProtocolTCP || got.ConnectionLimit != -1 || !got.AdminStateUp || got.Port != 80 || got.Name != "web" {
			t.Errorf("stored %+v", got)
		}
		if resp.Header.Get("X-Request-Id") == "" {
			t.Error("no X-Request-Id")
		}
	})

	t.Run("OKClientID", func(t *testing.T) {
		vips := &mock.VIPService{CreateVIPFn: func(ctx context.Context, v *sdnlb.VIP) error {
			if v.ID != "1" {
				t.Errorf("id = %q, want the client's", v.ID)
			}
			return nil
		}}
		ts := MustServe(t, &Server{VIPService: vips})
		resp := testRequest(t, ts, "POST", "/v1/vips", `{"id":"1","address":"10.0.0.100","protocol":"ICMP","session_persistence":{"type":"SOURCE_IP","timeout":60}}`)
		var v sdnlb.VIP
		decodeBody(t, resp, http.StatusCreated, &v)
		if v.SessionPersistence == nil || v.SessionPersistence.Timeout != 60 {
			t.Errorf("session_persistence = %+v", v.SessionPersistence)
		}
	})

	post := func(name, body string, status int, code, field string, headers ...string) routeCase {
		return routeCase{name: name, method: "POST", path: "/v1/vips", body: body, headers: headers, status: status, code: code, field: field}
	}
	assertRejections(t, newMemStore(), []routeCase{
		post("ErrBadJSON", `{"address":`, 400, sdnlb.EINVALID, ""),
		post("ErrSyntax", `{"address" "x"}`, 400, sdnlb.EINVALID, ""),
		post("ErrEmpty", ``, 400, sdnlb.EINVALID, "", "Content-Type: application/json"),
		post("ErrNotObject", `[1,2]`, 400, sdnlb.EINVALID, ""),
		post("ErrTwoValues", `{"address":"10.0.0.1","port":80} {}`, 400, sdnlb.EINVALID, ""),
		post("ErrUnknownField", `{"address":"10.0.0.1","prot":"TCP"}`, 400, sdnlb.EINVALID, "prot"),
		post("ErrWrongType", `{"address":"10.0.0.1","port":"80"}`, 400, sdnlb.EINVALID, "port"),
		post("ErrWrongTypeNested", `{"address":"10.0.0.1","port":80,"session_persistence":{"type":"SOURCE_IP","timeout":"x"}}`, 400, sdnlb.EINVALID, "session_persistence.timeout"),
		post("ErrUnknownNested", `{"address":"10.0.0.1","port":80,"session_persistence":{"kind":"x"}}`, 400, sdnlb.EINVALID, "session_persistence.kind"),
		post("ErrReadOnlyStatus", `{"address":"10.0.0.1","port":80,"status":"ACTIVE"}`, 400, sdnlb.EINVALID, "status"),
		post("ErrReadOnlyMAC", `{"address":"10.0.0.1","port":80,"mac":null}`, 400, sdnlb.EINVALID, "mac"),
		post("ErrReadOnlyCreatedAt", `{"address":"10.0.0.1","port":80,"created_at":"2020-01-01T00:00:00Z"}`, 400, sdnlb.EINVALID, "created_at"),
		post("ErrValidationAddress", `{"address":"10.0.0.256","port":80}`, 400, sdnlb.EINVALID, "address"),
		post("ErrValidationPort", `{"address":"10.0.0.1","port":65536}`, 400, sdnlb.EINVALID, "port"),
		post("ErrValidationProtocol", `{"address":"10.0.0.1","port":80,"protocol":"tcp"}`, 400, sdnlb.EINVALID, "protocol"),
		post("ErrValidationID", `{"id":"a/b","address":"10.0.0.1","port":80}`, 400, sdnlb.EINVALID, "id"),
		post("ErrContentTypeForm", `{"address":"10.0.0.1","port":80}`, 415, sdnlb.EUNSUPPORTED, "", "Content-Type: application/x-www-form-urlencoded"),
		post("ErrContentTypeMergePatchOnPost", `{"address":"10.0.0.1","port":80}`, 415, sdnlb.EUNSUPPORTED, "", "Content-Type: application/merge-patch+json"),
		post("ErrCharset", `{"address":"10.0.0.1","port":80}`, 415, sdnlb.EUNSUPPORTED, "", "Content-Type: application/json; charset=latin1"),
		post("ErrTooLarge", `{"name":"`+strings.Repeat("x", maxBodyBytes)+`"}`, 413, sdnlb.ETOOLARGE, ""),
	})

	t.Run("OKCharset", func(t *testing.T) {
		vips := &mock.VIPService{CreateVIPFn: func(ctx context.Context, v *sdnlb.VIP) error { return nil }}
		ts := MustServe(t, &Server{VIPService: vips})
		resp := testRequest(t, ts, "POST", "/v1/vips", `{"address":"10.0.0.1","port":80}`, "Content-Type: application/json; charset=UTF-8")
		if resp.Status != http.StatusCreated {
			t.Fatalf("status %d: %s", resp.Status, resp.Body)
		}
	})

	storeErrors := []struct {
		name        string
		err         error
		status      int
		code, field string
	}{
		{"ErrConflict", sdnlb.FieldErrorf(sdnlb.ECONFLICT, "address", "VIP 7 has 10.0.0.1 TCP 80"), 409, sdnlb.ECONFLICT, "address"},
		{"ErrNotFound", sdnlb.FieldErrorf(sdnlb.ENOTFOUND, "pool_id", "no pool 9"), 404, sdnlb.ENOTFOUND, "pool_id"},
		{"ErrUnavailable", sdnlb.Errorf(sdnlb.EUNAVAILABLE, "store closed"), 503, sdnlb.EUNAVAILABLE, ""},
	}
	for _, tt := range storeErrors {
		t.Run(tt.name, func(t *testing.T) {
			vips := &mock.VIPService{CreateVIPFn: func(ctx context.Context, v *sdnlb.VIP) error { return tt.err }}
			ts := MustServe(t, &Server{VIPService: vips})
			assertError(t, testRequest(t, ts, "POST", "/v1/vips", `{"address":"10.0.0.1","port":80}`), tt.status, tt.code, tt.field)
		})
	}

	t.Run("ErrInternalHidesDetails", func(t *testing.T) {
		vips := &mock.VIPService{CreateVIPFn: func(ctx context.Context, v *sdnlb.VIP) error {
			return errorString("sqlite: disk I/O error at /var/lib/secret.db")
		}}
		var logs syncBuffer
		ts := MustServe(t, &Server{VIPService: vips, Logger: newTestLogger(&logs)})
		resp := testRequest(t, ts, "POST", "/v1/vips", `{"address":"10.0.0.1","port":80}`, "X-Request-Id: req-42")
		assertError(t, resp, 500, sdnlb.EINTERNAL, "")
		if strings.Contains(string(resp.Body), "secret") || !strings.Contains(string(resp.Body), "req-42") {
			t.Errorf("body %s: must hide the cause and carry the request id", resp.Body)
		}
		if !strings.Contains(logs.String(), "secret.db") || !strings.Contains(logs.String(), "level=ERROR") {
			t.Errorf("the cause is not logged at Error: %s", logs.String())
		}
		if resp.Header.Get("X-Request-Id") != "req-42" {
			t.Errorf("X-Request-Id = %q", resp.Header.Get("X-Request-Id"))
		}
	})
}

func TestVIPRoutes_List(t *testing.T) {
	vip := func(id string) *sdnlb.VIP { return &sdnlb.VIP{ID: id, Address: "10.0.0." + id} }
	tests := []struct {
		name      string
		query     string
		stored    []*sdnlb.VIP
		wantLimit int
		wantAfter string
		wantAddr  string
		wantIDs   []string
		wantNext  string
	}{
		{"Default", "", []*sdnlb.VIP{vip("1"), vip("2")}, sdnlb.DefaultPageLimit + 1, "", "", []string{"1", "2"}, ""},
		{"Empty", "", nil, sdnlb.DefaultPageLimit + 1, "", "", []string{}, ""},
		{"MorePages", "?limit=2", []*sdnlb.VIP{vip("1"), vip("2"), vip("3")}, 3, "", "", []string{"1", "2"}, "2"},
		{"After", "?limit=2&after=2", []*sdnlb.VIP{vip("3")}, 3, "2", "", []string{"3"}, ""},
		{"Address", "?address=10.0.0.3", []*sdnlb.VIP{vip("3")}, sdnlb.DefaultPageLimit + 1, "", "10.0.0.3", []string{"3"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vips := &mock.VIPService{FindVIPsFn: func(ctx context.Context, f sdnlb.VIPFilter) ([]*sdnlb.VIP, error) {
				if f.Limit != tt.wantLimit || f.After != tt.wantAfter {
					t.Errorf("page = %+v, want limit %d after %q", f.Page, tt.wantLimit, tt.wantAfter)
				}
				if (f.Address == nil) != (tt.wantAddr == "") || (f.Address != nil && *f.Address != tt.wantAddr) {
					t.Errorf("address filter = %v, want %q", f.Address, tt.wantAddr)
				}
				return tt.stored, nil
			}}
			ts := MustServe(t, &Server{VIPService: vips})
			var got vipList
			decodeBody(t, testRequest(t, ts, "GET", "/v1/vips"+tt.query, ""), http.StatusOK, &got)
			ids := []string{}
			for _, v := range got.VIPs {
				ids = append(ids, v.ID)
			}
			if strings.Join(ids, ",") != strings.Join(tt.wantIDs, ",") || got.Next != tt.wantNext {
				t.Errorf("got ids %v next %q, want %v next %q", ids, got.Next, tt.wantIDs, tt.wantNext)
			}
			if got.VIPs == nil {
				t.Error("vips is null, want []")
			}
		})
	}
	for _, q := range []string{"?limit=0", "?limit=1001", "?limit=x"} {
		t.Run("ErrLimit"+q, func(t *testing.T) {
			ts := MustServe(t, &Server{VIPService: &mock.VIPService{}})
			assertError(t, testRequest(t, ts, "GET", "/v1/vips"+q, ""), 400, sdnlb.EINVALID, "limit")
		})
	}
}

func TestVIPRoutes_Get(t *testing.T) {
	vips := &mock.VIPService{FindVIPByIDFn: func(ctx context.Context, id string) (*sdnlb.VIP, error) {
		if id == "1" {
			return &sdnlb.VIP{ID: "1", Address: "10.0.0.1"}, nil
		}
		return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "no VIP %s", id)
	}}
	ts := MustServe(t, &Server{VIPService: vips})
	t.Run("OK", func(t *testing.T) {
		var v sdnlb.VIP
		decodeBody(t, testRequest(t, ts, "GET", "/v1/vips/1", ""), 200, &v)
		if v.ID != "1" || v.Address != "10.0.0.1" {
			t.Errorf("got %+v", v)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		assertError(t, testRequest(t, ts, "GET", "/v1/vips/2", ""), 404, sdnlb.ENOTFOUND, "")
	})
}

func TestVIPRoutes_Update(t *testing.T) {
	stored := func() *sdnlb.VIP {
		return &sdnlb.VIP{ID: "1", Name: "old", Address: "10.0.0.1", Protocol: sdnlb.ProtocolUDP, Port: 53,
			ConnectionLimit: 100, AdminStateUp: false, SessionPersistence: &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP, Timeout: 9}}
	}
	tests := []struct {
		name, method, body string
		want               func(v *sdnlb.VIP) bool
	}{
		{"PatchKeepsOthers", "PATCH", `{"name":"new"}`, func(v *sdnlb.VIP) bool {
			return v.Name == "new" && v.Protocol == sdnlb.ProtocolUDP && v.Port == 53 && v.ConnectionLimit == 100 && v.SessionPersistence != nil
		}},
		{"PatchNullRemovesPersistence", "PATCH", `{"session_persistence":null}`, func(v *sdnlb.VIP) bool {
			return v.SessionPersistence == nil && v.Name == "old"
		}},
		{"PutDefaultsTheRest", "PUT", `{"address":"10.0.0.2","port":80}`, func(v *sdnlb.VIP) bool {
			return v.Name == "" && v.Address == "10.0.0.2" && v.Protocol == sdnlb.ProtocolTCP && v.ConnectionLimit == -1 &&
				v.AdminStateUp && v.SessionPersistence == nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vips := &mock.VIPService{
				UpdateVIPFn: func(ctx context.Context, id string, upd sdnlb.VIPUpdate) (*sdnlb.VIP, error) {
					v := stored()
					upd.Apply(v)
					return v, nil
				},
			}
			ts := MustServe(t, &Server{VIPService: vips})
			var v sdnlb.VIP
			decodeBody(t, testRequest(t, ts, tt.method, "/v1/vips/1", tt.body), 200, &v)
			if !tt.want(&v) {
				t.Errorf("got %+v", v)
			}
		})
	}

	assertRejections(t, mustMemStore(t, stored()), []routeCase{
		{name: "ErrIDReadOnly", method: "PATCH", path: "/v1/vips/1", body: `{"id":"2"}`, status: 400, code: sdnlb.EINVALID, field: "id"},
		{name: "ErrStatusReadOnly", method: "PUT", path: "/v1/vips/1", body: `{"address":"10.0.0.2","port":80,"status":"DOWN"}`, status: 400, code: sdnlb.EINVALID, field: "status"},
		{name: "ErrValidation", method: "PATCH", path: "/v1/vips/1", body: `{"port":-1}`, status: 400, code: sdnlb.EINVALID, field: "port"},
		{name: "ErrPutValidation", method: "PUT", path: "/v1/vips/1", body: `{"name":"x"}`, status: 400, code: sdnlb.EINVALID, field: "address"},
		{name: "ErrUnknownField", method: "PATCH", path: "/v1/vips/1", body: `{"nmae":"x"}`, status: 400, code: sdnlb.EINVALID, field: "nmae"},
		{name: "ErrPutMergePatch", method: "PUT", path: "/v1/vips/1", body: `{"name":"x"}`, headers: []string{"Content-Type: application/merge-patch+json"},
			status: 415, code: sdnlb.EUNSUPPORTED},
		{name: "ErrNotFound", method: "PATCH", path: "/v1/vips/2", body: `{"name":"x"}`, status: 404, code: sdnlb.ENOTFOUND},
		// The id is checked before the body, as it was when the handler read the VIP first.
		{name: "ErrNotFoundBeforeInvalid", method: "PATCH", path: "/v1/vips/2", body: `{"port":0}`, status: 404, code: sdnlb.ENOTFOUND},
	})

	t.Run("OKMergePatch", func(t *testing.T) {
		vips := &mock.VIPService{
			UpdateVIPFn: func(ctx context.Context, id string, upd sdnlb.VIPUpdate) (*sdnlb.VIP, error) {
				return stored(), nil
			},
		}
		ts := MustServe(t, &Server{VIPService: vips})
		resp := testRequest(t, ts, "PATCH", "/v1/vips/1", `{"name":"x"}`, "Content-Type: application/merge-patch+json")
		if resp.Status != 200 {
			t.Fatalf("status %d: %s", resp.Status, resp.Body)
		}
	})
}

func TestVIPRoutes_Delete(t *testing.T) {
	tests := []struct {
		name        string
		query       string
		storeErr    error
		wantCascade bool
		status      int
		code        string
	}{
		{"OK", "", nil, false, 204, ""},
		{"OKCascade", "?cascade=true", nil, true, 204, ""},
		{"ErrConflict", "", sdnlb.Errorf(sdnlb.ECONFLICT, "pool 1 serves VIP 1"), false, 409, sdnlb.ECONFLICT},
		{"ErrNotFound", "", sdnlb.Errorf(sdnlb.ENOTFOUND, "no VIP 1"), false, 404, sdnlb.ENOTFOUND},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vips := &mock.VIPService{DeleteVIPFn: func(ctx context.Context, id string, cascade bool) error {
				if id != "1" || cascade != tt.wantCascade {
					t.Errorf("DeleteVIP(%q, %v)", id, cascade)
				}
				return tt.storeErr
			}}
			ts := MustServe(t, &Server{VIPService: vips})
			resp := testRequest(t, ts, "DELETE", "/v1/vips/1"+tt.query, "")
			if tt.code != "" {
				assertError(t, resp, tt.status, tt.code, "")
			} else if resp.Status != tt.status || len(resp.Body) != 0 {
				t.Errorf("status %d body %q", resp.Status, resp.Body)
			}
		})
	}
	v := sdnlb.NewVIP()
	v.ID, v.Address, v.Port = "1", "10.0.0.1", 80
	assertRejections(t, mustMemStore(t, v), []routeCase{
		{name: "ErrCascadeValue", method: "DELETE", path: "/v1/vips/1?cascade=yes", status: 400, code: sdnlb.EINVALID, field: "cascade"},
	})
}

// A VIP may not take the address of a host the switches learned: created
// there, moved there or enabled there, on any route. The refusal names
// the host and where it was learned, and changes nothing; writes that
// take no address do not ask.
func TestVIPRoutes_LearnedHostAddress(t *testing.T) {
	host := &sdnlb.Host{Address: "10.0.0.5", MAC: "cc:00:00:00:00:05", DPID: "00:00:00:00:00:00:00:01",
		Port: "3", PortName: "c1-eth0", LastSeen: time.Now().Add(-12 * time.Second)}
	asked := 0
	hosts := &mock.HostService{FindHostFn: func(ctx context.Context, address string) (*sdnlb.Host, error) {
		asked++
		if address == host.Address {
			return host, nil
		}
		return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "no host at %s", address)
	}}
	on, off := sdnlb.NewVIP(), sdnlb.NewVIP()
	on.ID, on.Address, on.Port = "on", "10.0.0.100", 80
	off.ID, off.Address, off.Port, off.AdminStateUp = "off", "10.0.0.5", 80, false
	store := mustMemStore(t, on, off)
	srv := store.server()
	srv.HostService = hosts
	ts := MustServe(t, srv)

	refused := func(name, method, path, body string) routeCase {
		return routeCase{name: name, method: method, path: path, body: body, status: 409, code: sdnlb.ECONFLICT, field: "address"}
	}
	for _, c := range []routeCase{
		refused("Create", "POST", "/v1/vips", `{"address":"10.0.0.5","port":443}`),
		refused("Move", "PATCH", "/v1/vips/on", `{"address":"10.0.0.5"}`),
		refused("Replace", "PUT", "/v1/vips/on", `{"address":"10.0.0.5","port":80}`),
		refused("Enable", "PATCH", "/v1/vips/off", `{"admin_state_up":true}`),
		refused("Floodlight", "POST", "/quantum/v1.0/vips/", `{"id":"fl","protocol":"tcp","address":"10.0.0.5","port":"443"}`),
	} {
		t.Run(c.name, func(t *testing.T) {
			before, _ := store.LoadConfig(context.Background())
			asked = 0
			c.assert(t, ts)
			if asked != 1 {
				t.Errorf("asked the switches %d times, want once", asked)
			}
			if after, _ := store.LoadConfig(context.Background()); !reflect.DeepEqual(before, after) {
				t.Errorf("the refused request changed the store:\n before %+v\n after  %+v", before, after)
			}
		})
	}
	t.Run("MessageNamesTheHost", func(t *testing.T) {
		resp := testRequest(t, ts, "POST", "/v1/vips", `{"address":"10.0.0.5","port":443}`)
		for _, s := range []string{"host 10.0.0.5 (MAC cc:00:00:00:00:05)", "switch 00:00:00:00:00:00:00:01 port 3 (c1-eth0)", "last seen 12s ago",
			"?take_address=true"} {
			if !strings.Contains(string(resp.Body), s) {
				t.Errorf("the refusal does not say %q: %s", s, resp.Body)
			}
		}
	})
	t.Run("TakeAddressNotABool", func(t *testing.T) {
		before, _ := store.LoadConfig(context.Background())
		assertError(t, testRequest(t, ts, "POST", "/v1/vips?take_address=please", `{"address":"10.0.0.5","port":443}`), 400, sdnlb.EINVALID, "take_address")
		if after, _ := store.LoadConfig(context.Background()); !reflect.DeepEqual(before, after) {
			t.Errorf("the refused request changed the store")
		}
	})
	// A member's address, which the switches learn too, is the store's to
	// refuse: the refusal names the member.
	t.Run("MemberNamedFirst", func(t *testing.T) {
		p := sdnlb.NewPool()
		p.ID = "web"
		m := sdnlb.NewMember()
		m.ID, m.PoolID, m.Address = "m1", "web", host.Address
		srv := mustMemStore(t, p, m).server()
		srv.HostService = hosts
		resp := testRequest(t, MustServe(t, srv), "POST", "/v1/vips", `{"address":"10.0.0.5","port":443}`)
		assertError(t, resp, 409, sdnlb.ECONFLICT, "address")
		if !strings.Contains(string(resp.Body), "member m1 of pool web") {
			t.Errorf("the refusal does not name the member: %s", resp.Body)
		}
	})
	for _, tt := range []struct {
		name, method, path, body string
		status, asks             int
	}{
		{"CreateElsewhere", "POST", "/v1/vips", `{"address":"10.0.0.6","port":80}`, 201, 1},
		{"RenameDisabled", "PATCH", "/v1/vips/off", `{"name":"still off"}`, 200, 0},
		{"RenameEnabled", "PATCH", "/v1/vips/on", `{"name":"same address"}`, 200, 0},
		// A request that says it takes the address over does, unasked.
		{"TakeAddressCreate", "POST", "/v1/vips?take_address=true", `{"address":"10.0.0.5","port":443}`, 201, 0},
		{"TakeAddressEnable", "PATCH", "/v1/vips/off?take_address=1", `{"admin_state_up":true}`, 200, 0},
		{"TakeAddressFalse", "PUT", "/v1/vips/on?take_address=false", `{"address":"10.0.0.5","port":80}`, 409, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			asked = 0
			if resp := testRequest(t, ts, tt.method, tt.path, tt.body); resp.Status != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.Status, tt.status, resp.Body)
			}
			if asked != tt.asks {
				t.Errorf("asked the switches %d times, want %d", asked, tt.asks)
			}
		})
	}
}
