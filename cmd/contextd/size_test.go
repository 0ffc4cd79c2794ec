package main

import (
	"io"
	"strings"
	"testing"
)

// TestParseSize: sizes are written as the docs write them (operations.md:
// "128 MiB"); IEC units are powers of 1024, SI units powers of 1000, each
// value computed by hand.
func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"134217728": 134217728,
		"64MiB":     64 << 20, // 67108864
		"64 MiB":    64 << 20,
		"64mib":     64 << 20,
		"64Mi":      64 << 20,
		"128 MiB":   128 << 20,
		"16KiB":     16384,
		"1GiB":      1 << 30,
		"0.5GiB":    512 << 20,
		"64MB":      64_000_000,
		"64M":       64_000_000,
		"8kB":       8000,
		"1 GB":      1_000_000_000,
		" 10B ":     10,
		"0":         0,
		"-1":        -1,
		"-64MiB":    -(64 << 20),
	} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "lots", "64 parsecs", "MiB", "64MiBs", "1e9", "99999999999EiB"} {
		if n, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, n)
		} else if !strings.Contains(err.Error(), "128MiB") {
			t.Errorf("parseSize(%q): %v does not say how to write a size", in, err)
		}
	}
}

// TestSizeFlagsTakeUnits: every size flag and CONTEXTD_MEMORY_LIMIT take
// the same units, and a bad size is refused naming the flag and the way to
// write one.
func TestSizeFlagsTakeUnits(t *testing.T) {
	dir := t.TempDir()
	base := []string{"--sessions-dir", dir, "--state-dir", dir + "/state"}
	c, _, err := parseFlags(serveCmd, append([]string{"--memory-limit", "64MiB", "--max-line-bytes", "1 MiB", "--max-body-bytes", "2MB"}, base...), env(nil), io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.MemoryLimit != 67108864 || c.MaxLineBytes != 1048576 || c.MaxBodyBytes != 2000000 {
		t.Errorf("memory-limit %d, max-line-bytes %d, max-body-bytes %d; want 67108864, 1048576, 2000000", c.MemoryLimit, c.MaxLineBytes, c.MaxBodyBytes)
	}
	c, _, err = parseFlags(serveCmd, base, env(map[string]string{"CONTEXTD_MEMORY_LIMIT": "256 MiB"}), io.Discard, io.Discard)
	if err != nil || c.MemoryLimit != 256<<20 {
		t.Fatalf("CONTEXTD_MEMORY_LIMIT=256 MiB: %v, %d; want 268435456", err, c.MemoryLimit)
	}
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"serve", "--memory-limit", "64 parsecs"}, `invalid value "64 parsecs" for flag -memory-limit: "64 parsecs" is not a size; write a number of bytes with an optional unit, such as 134217728, 128MiB`},
		{nil, []string{"reindex", "--max-line-bytes", "big"}, `invalid value "big" for flag -max-line-bytes: "big" is not a size`},
		{nil, []string{"serve", "--max-body-bytes", "1x"}, `invalid value "1x" for flag -max-body-bytes`},
		{map[string]string{"CONTEXTD_MEMORY_LIMIT": "lots"}, []string{"serve"}, `CONTEXTD_MEMORY_LIMIT="lots" is not a size; write a number of bytes`},
		{nil, []string{"serve", "--memory-limit", "8MiB"}, "--memory-limit 8388608 is under 16 MiB, too little to index a session; pass at least 16MiB"},
	} {
		_, _, err := runCLI(t, tc.env, append(tc.args, base...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: error %v, want it to contain %q", tc.env, tc.args, err, tc.want)
		}
	}
	if _, _, err := runCLI(t, nil, "inspect", "--max-line-bytes", "2KiB", "--tree", "../../testdata/pi-tree/tree-basic.jsonl"); err != nil {
		t.Errorf("inspect --max-line-bytes 2KiB: %v", err)
	}
}

// TestAutoSizeValue: --index-max-bytes takes "auto" (stored as -1 and
// printed back as auto) besides every size parseSize reads; other size
// flags refuse "auto".
func TestAutoSizeValue(t *testing.T) {
	var n int64
	f := autoSizeValue{&n}
	if err := f.Set("auto"); err != nil || n != -1 || f.String() != "auto" {
		t.Errorf("Set(auto): %v, n=%d, String %q", err, n, f.String())
	}
	if err := f.Set("4GiB"); err != nil || n != 4<<30 || f.String() != "4294967296" {
		t.Errorf("Set(4GiB): %v, n=%d, String %q", err, n, f.String())
	}
	if err := (sizeValue[int64]{&n}).Set("auto"); err == nil {
		t.Errorf("a size flag without auto accepted auto")
	}
}

// TestAutoIndexBudget: the automatic budget lies between its floor and
// its cap on any file system, and is the cap when the free space cannot
// be read.
func TestAutoIndexBudget(t *testing.T) {
	if b := autoIndexBudget(t.TempDir()); b < indexBudgetFloor || b > indexBudgetCap {
		t.Errorf("autoIndexBudget = %d, want within [%d, %d]", b, indexBudgetFloor, indexBudgetCap)
	}
	if b := autoIndexBudget("/no/such/dir"); b != indexBudgetCap {
		t.Errorf("autoIndexBudget of a missing dir = %d, want the cap %d", b, indexBudgetCap)
	}
}
