package ofp

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// mustGolden reads testdata/golden/NAME.hex: hex bytes with // comments,
// where the token "00*N" stands for N zero bytes.
func mustGolden(tb testing.TB, name string) []byte {
	tb.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", "golden", name+".hex"))
	if err != nil {
		tb.Fatal(err)
	}
	return mustParseHex(tb, string(text))
}

func mustParseHex(tb testing.TB, text string) []byte {
	tb.Helper()
	var out []byte
	for _, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		for _, tok := range strings.Fields(line) {
			if rep, count, ok := strings.Cut(tok, "*"); ok {
				n, err := strconv.Atoi(count)
				if err != nil || rep != "00" {
					tb.Fatalf("bad repeat token %q", tok)
				}
				out = append(out, make([]byte, n)...)
				continue
			}
			b, err := hex.DecodeString(tok)
			if err != nil {
				tb.Fatalf("bad hex token %q: %v", tok, err)
			}
			out = append(out, b...)
		}
	}
	return out
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

func mustOXM(tb testing.TB, class uint16, field OXMField, value, mask []byte) OXM {
	tb.Helper()
	o, err := NewOXM(class, field, value, mask)
	if err != nil {
		tb.Fatal(err)
	}
	return o
}
