package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLoadConfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sdnlb.conf")
	if err := os.WriteFile(file, []byte("# comment\ndb = /var/lib/sdnlb.db\napi-addr = \"0.0.0.0:9000\"\nlog-level = warn\napi-token = t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		args  []string
		env   map[string]string
		check func(t *testing.T, c Config)
	}{
		"Defaults": {nil, nil, func(t *testing.T, c Config) {
			if c != DefaultConfig() {
				t.Errorf("got %+v", c)
			}
		}},
		"OpenFlowAllow": {[]string{"--openflow-allow", "10.1.2.3, 192.0.2.0/24"}, nil, func(t *testing.T, c Config) {
			allow, err := c.openFlowAllow()
			if err != nil || len(allow) != 2 || allow[0].String() != "10.1.2.3/32" || allow[1].String() != "192.0.2.0/24" {
				t.Errorf("allow %v, %v", allow, err)
			}
		}},
		"Env": {nil, map[string]string{"SDNLB_API_ADDR": ":1", "SDNLB_API_TOKEN": "t", "SDNLB_FLOW_IDLE_TIMEOUT": "5s", "SDNLB_AUTH_READS": "true"}, func(t *testing.T, c Config) {
			if c.APIAddr != ":1" || c.FlowIdleTimeout != 5*time.Second || !c.AuthReads {
				t.Errorf("got %+v", c)
			}
		}},
		"FlagBeatsEnv": {[]string{"--api-addr", ":2"}, map[string]string{"SDNLB_API_ADDR": ":1", "SDNLB_API_INSECURE": "true"}, func(t *testing.T, c Config) {
			if c.APIAddr != ":2" {
				t.Errorf("api addr %q", c.APIAddr)
			}
		}},
		"File": {[]string{"--config", file}, nil, func(t *testing.T, c Config) {
			if c.DB != "/var/lib/sdnlb.db" || c.APIAddr != "0.0.0.0:9000" || c.LogLevel != slog.LevelWarn {
				t.Errorf("got %+v", c)
			}
		}},
		"Lists": {[]string{"--api-allowed-hosts", "lb.example, .ops.example", "--cors-origin", "https://ops.example"}, nil, func(t *testing.T, c Config) {
			if got := splitList(c.APIAllowedHosts); len(got) != 2 || got[1] != ".ops.example" {
				t.Errorf("allowed hosts %q", got)
			}
			if got := splitList(c.CORSOrigins); len(got) != 1 || got[0] != "https://ops.example" {
				t.Errorf("cors origins %q", got)
			}
		}},
		"LoopbackWithoutToken":  {[]string{"--api-addr", "[::1]:8080"}, nil, func(t *testing.T, c Config) {}},
		"LocalhostWithoutToken": {[]string{"--api-addr", "localhost:8080"}, nil, func(t *testing.T, c Config) {}},
		"OpenWhenAskedFor": {[]string{"--api-addr", ":8080", "--api-insecure"}, nil, func(t *testing.T, c Config) {
			if !c.APIInsecure {
				t.Error("APIInsecure not set")
			}
		}},
		"BGP": {[]string{"--bgp-asn", "65001", "--bgp-router-id", "192.0.2.10", "--bgp-peers", "192.0.2.1=65000",
			"--bgp-next-hops", "1=192.0.2.11,2=192.0.2.12", "--bgp-graceful-restart", "90s"}, nil, func(t *testing.T, c Config) {
			o, err := c.bgpOptions()
			if err != nil || o.ASN != 65001 || o.RouterID.String() != "192.0.2.10" || len(o.Peers) != 1 ||
				o.Peers[0].String() != "192.0.2.1:179" || len(o.NextHops) != 2 || o.GracefulRestart != 90*time.Second {
				t.Errorf("bgp %+v, %v", o, err)
			}
		}},
		"NoBGP": {nil, nil, func(t *testing.T, c Config) {
			if o, err := c.bgpOptions(); o != nil || err != nil {
				t.Errorf("bgp %+v, %v", o, err)
			}
		}},
		"EnvBeatsFile": {[]string{"--config=" + file}, map[string]string{"SDNLB_DB": "x.db"}, func(t *testing.T, c Config) {
			if c.DB != "x.db" || c.APIAddr != "0.0.0.0:9000" {
				t.Errorf("got %+v", c)
			}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := LoadConfig(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestLoadConfig_Errors(t *testing.T) {
	for name, args := range map[string][]string{
		"UnknownFlag":        {"--nope"},
		"BadLevel":           {"--log-level", "loud"},
		"BadFormat":          {"--log-format", "xml"},
		"KeyWithoutCert":     {"--openflow-tls-key", "k.pem"},
		"NegativeIdle":       {"--flow-idle-timeout", "-1s"},
		"Extra":              {"extra"},
		"MissingFile":        {"--config", "/nonexistent/sdnlb.conf"},
		"OpenAPIEverywhere":  {"--api-addr", ":8080"},
		"OpenAPIOnAddress":   {"--api-addr", "10.0.0.1:8080"},
		"OpenAPIByName":      {"--api-addr", "lb.example:8080"},
		"NoConns":            {"--api-max-conns", "0"},
		"NegativeConns":      {"--api-max-conns-per-client", "-1"},
		"NoClientPrefix4":    {"--api-client-prefix4", "0"},
		"LongClientPrefix6":  {"--api-client-prefix6", "129"},
		"BadAllow":           {"--openflow-allow", "10.0.0.0/8,switch-1"},
		"AllowNothing":       {"--openflow-allow", " , "}, // read as empty, it would admit every switch
		"NoSwitches":         {"--openflow-max-switches", "0"},
		"NoLinks":            {"--max-links", "0"},
		"NoHostsPerSwitch":   {"--max-hosts-per-switch", "-1"},
		"BGPPeersWithoutASN": {"--bgp-peers", "192.0.2.1=65000"},
		"BGPASNTooLarge":     append(bgpArgs(), "--bgp-asn", "4294967296"),
		"BGPNoRouterID":      append(bgpArgs(), "--bgp-router-id", ""),
		"BGPRouterIDv6":      append(bgpArgs(), "--bgp-router-id", "2001:db8::1"),
		"BGPNoPeers":         append(bgpArgs(), "--bgp-peers", ""),
		"BGPBadPeer":         append(bgpArgs(), "--bgp-peers", "192.0.2.1"),
		"BGPNoNextHops":      append(bgpArgs(), "--bgp-next-hops", ""),
		"BGPBadNextHop":      append(bgpArgs(), "--bgp-next-hops", "edge1=192.0.2.11"),
		"BGPRestartTooLong":  append(bgpArgs(), "--bgp-graceful-restart", "4096s"),
		"BGPRestartPartial":  append(bgpArgs(), "--bgp-graceful-restart", "1500ms"),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := LoadConfig(args, func(string) string { return "" }, io.Discard); err == nil {
				t.Fatal("no error")
			}
		})
	}
	t.Run("BadEnv", func(t *testing.T) {
		env := map[string]string{"SDNLB_MAX_PROBES": "many"}
		if _, err := LoadConfig(nil, func(k string) string { return env[k] }, io.Discard); err == nil {
			t.Fatal("no error")
		}
	})
}

// bgpArgs is a valid BGP configuration, for a test to spoil by a flag after.
func bgpArgs() []string {
	return []string{"--bgp-asn", "65001", "--bgp-router-id", "192.0.2.10", "--bgp-peers", "192.0.2.1=65000",
		"--bgp-next-hops", "1=192.0.2.11"}
}
