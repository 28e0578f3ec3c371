package sdnlb_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb"
)

// jsonFields lists the JSON names of a struct type's fields.
func jsonFields(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		// A field JSON leaves out (the pool's LBMethodUnset, which only
		// Floodlight's routes show) is neither declared nor exported.
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "-" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func changedFields(changes []sdnlb.FieldChange) []string {
	var names []string
	for _, c := range changes {
		names = append(names, c.Field)
	}
	return names
}

// Every field of the native objects is either one a client declares, which
// Changes compares, or one the store derives or keeps: a field added to a
// type must be put on one side.
func TestChanges_EveryField(t *testing.T) {
	vip := &sdnlb.VIP{Name: "n", Description: "d", Address: "10.0.0.1", Protocol: sdnlb.ProtocolUDP, Port: 1,
		ConnectionLimit: 1, SessionPersistence: &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP, Timeout: 1},
		AdminStateUp: true, Announce: true}
	pool := &sdnlb.Pool{Name: "n", Description: "d", VIPID: "v", LBMethod: sdnlb.Random, Dispatch: sdnlb.DispatchSwitch,
		Forwarding: sdnlb.ForwardingDSR, Protocol: sdnlb.ProtocolUDP, AdminStateUp: true, SlowStart: 1, ClientIPv6Prefix: 64, HashKey: sdnlb.HashKeyClient, MonitorIDs: []string{"m"}}
	member := &sdnlb.Member{PoolID: "p", Address: "10.0.0.1", Port: 1, Weight: 1, Capacity: 1, AdminStateUp: true}
	monitor := &sdnlb.Monitor{Name: "n", Type: sdnlb.MonitorHTTP, Delay: 1, Timeout: 1, MaxRetries: 1, Rise: 1,
		HTTPMethod: "GET", URLPath: "/", ExpectedCodes: "200", TLSVerify: true, Port: 1, AdminStateUp: true}
	for _, tc := range []struct {
		typ     reflect.Type
		changes []sdnlb.FieldChange
		derived []string
	}{
		{reflect.TypeFor[sdnlb.VIP](), (&sdnlb.VIP{}).Changes(vip), []string{"id", "pool_id", "mac", "status", "created_at", "updated_at"}},
		{reflect.TypeFor[sdnlb.Pool](), (&sdnlb.Pool{}).Changes(pool), []string{"id", "created_at", "updated_at"}},
		{reflect.TypeFor[sdnlb.Member](), (&sdnlb.Member{}).Changes(member), []string{"id", "status", "health", "created_at", "updated_at"}},
		{reflect.TypeFor[sdnlb.Monitor](), (&sdnlb.Monitor{}).Changes(monitor), []string{"id", "pool_ids", "created_at", "updated_at"}},
	} {
		got := append(changedFields(tc.changes), tc.derived...)
		slices.Sort(got)
		if want := jsonFields(tc.typ); !slices.Equal(got, want) {
			t.Errorf("%s: compared and derived fields %v, want every field %v", tc.typ.Name(), got, want)
		}
	}
}

func TestChanges_OldAndNew(t *testing.T) {
	old, new := sdnlb.NewVIP(), sdnlb.NewVIP()
	new.Port = 8080
	new.SessionPersistence = &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP, Timeout: 60}
	got := old.Changes(new)
	want := []sdnlb.FieldChange{{Field: "port", Old: 0, New: 8080}, {Field: "session_persistence", Old: old.SessionPersistence, New: new.SessionPersistence}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("changes %+v, want %+v", got, want)
	}
	same := *new
	same.SessionPersistence = &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP, Timeout: 60}
	if c := new.Changes(&same); len(c) != 0 {
		t.Fatalf("equal values compared as changes: %+v", c)
	}
}

func TestConfigObjectError(t *testing.T) {
	err := sdnlb.ConfigObjectError(sdnlb.ConfigPath("vips", 2), "web", sdnlb.FieldErrorf(sdnlb.EINVALID, "port", "port must be 0-65535"))
	if sdnlb.ErrorCode(err) != sdnlb.EINVALID || sdnlb.ErrorField(err) != "vips[2].port" ||
		sdnlb.ErrorMessage(err) != "vips[2] (id web): port must be 0-65535" {
		t.Errorf("got %v", err)
	}
	err = sdnlb.ConfigObjectError("pools[0]", "", sdnlb.Errorf(sdnlb.ECONFLICT, "taken"))
	if sdnlb.ErrorField(err) != "pools[0]" || sdnlb.ErrorMessage(err) != "pools[0]: taken" {
		t.Errorf("got %v", err)
	}
}
