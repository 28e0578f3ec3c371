package controller

import (
	"testing"

	"github.com/sdnlb/sdnlb/controller/model"
)

func TestFormatDPID(t *testing.T) {
	tests := []struct {
		dpid uint64
		want string
	}{
		{1, "00:00:00:00:00:00:00:01"},
		{0x0123456789abcdef, "01:23:45:67:89:ab:cd:ef"},
		{^uint64(0), "ff:ff:ff:ff:ff:ff:ff:ff"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := model.FormatDPID(tt.dpid); got != tt.want {
				t.Errorf("model.FormatDPID(%#x) = %s", tt.dpid, got)
			}
			if got, ok := parseDPID(tt.want); !ok || got != tt.dpid {
				t.Errorf("parseDPID(%s) = %#x %v", tt.want, got, ok)
			}
		})
	}
	for _, bad := range []string{"", "xyz", "00:00:00:00:00:00:00:00:01"} {
		t.Run("Bad/"+bad, func(t *testing.T) {
			if _, ok := parseDPID(bad); ok {
				t.Errorf("parseDPID(%q) accepted", bad)
			}
		})
	}
}
