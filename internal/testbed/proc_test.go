package testbed

import (
	"os"
	"testing"
	"time"
)

func TestParseProcessCPU(t *testing.T) {
	// utime 250 and stime 75 ticks: 3.25 s. The names hold what a naive
	// split on spaces or the first ')' would trip over.
	const rest = " S 1 42 42 0 -1 4194560 1375 0 0 0 250 75 3 4 20 0 9 0 1234 56789 1011 18446744073709551615\n"
	tests := []struct {
		name, stat string
		want       time.Duration
		wantErr    bool
	}{
		{name: "Plain", stat: "4242 (ovs-vswitchd)" + rest, want: 3250 * time.Millisecond},
		{name: "NameWithSpacesAndParens", stat: "4242 (a) b (c))" + rest, want: 3250 * time.Millisecond},
		{name: "ErrNoName", stat: "4242 ovs-vswitchd S 1", wantErr: true},
		{name: "ErrTooShort", stat: "4242 (sdnlb) S 1 42 42 0 -1 4194560 1375 0 0 0 250", wantErr: true},
		{name: "ErrNotANumber", stat: "4242 (sdnlb) S 1 42 42 0 -1 4194560 1375 0 0 0 x 75 3", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcessCPU([]byte(tt.stat))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseProcessCPU: err %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("parseProcessCPU = %v, want %v", got, tt.want)
			}
		})
	}
}

// ProcessCPU of this process grows as it burns CPU; ProcessRSS sees the
// memory it holds.
func TestProcessCPU_Self(t *testing.T) {
	before, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	got := before
	sum := 0
	for deadline := time.Now().Add(10 * time.Second); got < before+20*time.Millisecond && time.Now().Before(deadline); {
		for i := range 1 << 20 {
			sum += i
		}
		if got, err = ProcessCPU(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	if got < before+20*time.Millisecond {
		t.Errorf("CPU time went from %v to %v while burning a CPU for 10 s (sum %d)", before, got, sum)
	}
	rss, err := ProcessRSS(os.Getpid())
	if err != nil || rss < 1<<20 {
		t.Errorf("ProcessRSS = %d, %v; want a Go process's megabytes", rss, err)
	}
}
