package ofp10

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// mustGolden reads testdata/golden/NAME.hex: hex bytes with // comments,
// where the token "00*N" stands for N zero bytes (the ofp package's
// format).
func mustGolden(tb testing.TB, name string) []byte {
	tb.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", "golden", name+".hex"))
	if err != nil {
		tb.Fatal(err)
	}
	var out []byte
	for _, line := range strings.Split(string(text), "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		for _, tok := range strings.Fields(line) {
			if rep, count, ok := strings.Cut(tok, "*"); ok {
				n, err := strconv.Atoi(count)
				if err != nil || rep != "00" {
					tb.Fatalf("%s: bad repeat token %q", name, tok)
				}
				out = append(out, make([]byte, n)...)
				continue
			}
			b, err := hex.DecodeString(tok)
			if err != nil {
				tb.Fatalf("%s: bad hex token %q: %v", name, tok, err)
			}
			out = append(out, b...)
		}
	}
	return out
}

// ovsText reads testdata/golden/NAME.txt: what `ovs-ofctl ofp-print`
// (Open vSwitch 3.1) prints for the vector.
func ovsText(tb testing.TB, name string) string {
	tb.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", "golden", name+".txt"))
	if err != nil {
		tb.Fatal(err)
	}
	return string(text)
}

// goldenNames lists every vector in testdata/golden, for the fuzz seeds.
func goldenNames(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.hex"))
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".hex"))
	}
	return names
}
