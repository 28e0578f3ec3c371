// Package deploy checks the container files: no Docker engine runs in CI, so
// docker-compose.yml is validated with the compose-spec loader (schema
// included) and the Dockerfiles are checked for the contract sdnlb relies on.
// It also keeps the PromQL of docs/OBSERVABILITY.md and the recording rules
// of prometheus/alerts.yml the same.
package deploy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

const controllerPort = "6653"

func TestCompose(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	project := mustLoadCompose(t, filepath.Join(root, "docker-compose.yml"), testToken)

	if got := project.ServiceNames(); !slices.Equal(sorted(got), []string{"ovs", "sdnlb"}) {
		t.Fatalf("services = %v, want ovs and sdnlb", got)
	}
	lb := project.Services["sdnlb"]
	ovs := project.Services["ovs"]

	t.Run("SdnlbBuildsFromRoot", func(t *testing.T) {
		if lb.Build == nil || lb.Build.Context != root {
			t.Fatalf("sdnlb build = %+v, want context %s", lb.Build, root)
		}
	})

	t.Run("SdnlbPorts", func(t *testing.T) {
		for _, want := range []uint32{8080, 6653} {
			if !hasPort(lb.Ports, want) {
				t.Errorf("sdnlb ports %+v lack %d published as %d/tcp", lb.Ports, want, want)
			}
		}
		for _, p := range lb.Ports {
			if p.HostIP != "127.0.0.1" {
				t.Errorf("port %d is published on %q, want the host's loopback only", p.Target, p.HostIP)
			}
		}
	})

	t.Run("SdnlbTakesToken", func(t *testing.T) {
		if got := lb.Environment["SDNLB_API_TOKEN"]; got == nil || *got != testToken {
			t.Errorf("SDNLB_API_TOKEN = %v, want the environment's", got)
		}
		if _, ok := lb.Environment["SDNLB_API_INSECURE"]; ok {
			t.Error("the compose file opens the API without a token")
		}
	})

	t.Run("ErrNoToken", func(t *testing.T) {
		_, err := loadCompose(filepath.Join(root, "docker-compose.yml"))
		if err == nil || !strings.Contains(err.Error(), "SDNLB_API_TOKEN") {
			t.Errorf("loading without SDNLB_API_TOKEN: %v, want an error naming it", err)
		}
	})

	t.Run("SdnlbDataVolume", func(t *testing.T) {
		i := slices.IndexFunc(lb.Volumes, func(v types.ServiceVolumeConfig) bool { return v.Target == "/data" })
		if i < 0 {
			t.Fatalf("sdnlb volumes %+v do not mount /data", lb.Volumes)
		}
		v := lb.Volumes[i]
		if v.Type != types.VolumeTypeVolume {
			t.Errorf("/data is a %s mount, want a named volume", v.Type)
		}
		if _, ok := project.Volumes[v.Source]; !ok {
			t.Errorf("volume %q is not declared at top level", v.Source)
		}
	})

	t.Run("OvsPointsAtSdnlb", func(t *testing.T) {
		target := ovs.Environment["OVS_CONTROLLER"]
		if target == nil {
			t.Fatal("ovs has no OVS_CONTROLLER")
		}
		if want := "tcp:sdnlb:" + controllerPort; *target != want {
			t.Errorf("OVS_CONTROLLER = %q, want %q", *target, want)
		}
		if _, ok := ovs.DependsOn["sdnlb"]; !ok {
			t.Errorf("ovs does not depend on sdnlb: %v", ovs.DependsOn)
		}
		if !ovs.Privileged {
			t.Error("ovs is not privileged: ovs-vswitchd cannot create its bridge")
		}
	})

	t.Run("OvsImageFiles", func(t *testing.T) {
		if ovs.Build == nil {
			t.Fatal("ovs has no build section")
		}
		dockerfile := filepath.Join(ovs.Build.Context, ovs.Build.Dockerfile)
		mustContainLines(t, dockerfile, "FROM debian:bookworm-slim", "COPY ovs-entrypoint.sh ")
		info, err := os.Stat(filepath.Join(ovs.Build.Context, "ovs-entrypoint.sh"))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode()&0o111 == 0 {
			t.Error("ovs-entrypoint.sh is not executable")
		}
	})
}

// TestCompose_Validation proves the loader validates against the compose
// schema, so TestCompose would catch a malformed file.
func TestCompose_Validation(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		wantErr string
	}{
		{"OK", "services:\n  a:\n    image: busybox\n    ports: [\"8080:8080\"]\n", ""},
		{"ErrUnknownKey", "services:\n  a:\n    image: busybox\n    privileges: true\n", "privileges"},
		{"ErrPortsNotList", "services:\n  a:\n    image: busybox\n    ports: {http: 80}\n", "ports"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "compose.yml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := loadCompose(path)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("loaded without error, want one mentioning %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q does not mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestDockerfile(t *testing.T) {
	mustContainLines(t, filepath.Join("..", "Dockerfile"),
		"FROM golang:1.26-bookworm AS build",
		"RUN CGO_ENABLED=1 go build -trimpath -ldflags=\"-s -w\" -o /out/sdnlb ./cmd/sdnlb",
		"FROM debian:bookworm-slim",
		"USER sdnlb",
		"VOLUME /data",
		"EXPOSE 8080 "+controllerPort,
		`ENTRYPOINT ["sdnlb", "--db", "/data/sdnlb.db", "--api-addr", ":8080"]`,
	)
	data, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "API_INSECURE=true\n") || strings.Contains(string(data), "\"--api-insecure\"") {
		t.Error("the image opens the API without a token")
	}
}

// testToken stands for the operator's SDNLB_API_TOKEN.
const testToken = "test-token"

func mustLoadCompose(tb testing.TB, path, token string) *types.Project {
	tb.Helper()
	project, err := loadCompose(path, "SDNLB_API_TOKEN="+token)
	if err != nil {
		tb.Fatalf("load %s: %v", path, err)
	}
	return project
}

// loadCompose loads a compose file as `docker compose config` would, with
// schema validation on and only env ("NAME=value") as the environment.
func loadCompose(path string, env ...string) (*types.Project, error) {
	details := types.ConfigDetails{
		WorkingDir:  filepath.Dir(path),
		ConfigFiles: []types.ConfigFile{{Filename: path}},
		Environment: types.NewMapping(env),
	}
	return loader.LoadWithContext(context.Background(), details, func(o *loader.Options) {
		o.SetProjectName("sdnlb", true)
	})
}

func hasPort(ports []types.ServicePortConfig, port uint32) bool {
	return slices.ContainsFunc(ports, func(p types.ServicePortConfig) bool {
		return p.Target == port && p.Published == strconv.FormatUint(uint64(port), 10) && p.Protocol == "tcp"
	})
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// mustContainLines fails unless every wanted line starts some line of the
// file (after trimming).
func mustContainLines(tb testing.TB, path string, want ...string) {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for _, w := range want {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), w) }) {
			tb.Errorf("%s has no line starting %q", path, w)
		}
	}
}
