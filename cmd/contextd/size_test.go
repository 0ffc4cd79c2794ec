package main

import (
	"errors"
	"testing"
)

// TestParseSize: byte counts with and without units, as go-humanize's
// ParseBytes defines them (IEC units are powers of 1024, SI units powers
// of 1000), and the refusals.
func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"134217728", 134217728},
		{"4GiB", 4 << 30},
		{"512 MiB", 512 << 20},
		{"64KiB", 64 << 10},
		{"1kB", 1000},
		{"2GB", 2_000_000_000},
		{"-1", -1},
		{" -2GiB ", -2 << 30},
	} {
		got, err := parseSize(c.in)
		if err != nil || got != c.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "lots", "4 parsecs", "-", "GiB"} {
		if _, err := parseSize(bad); !errors.Is(err, errSize) {
			t.Errorf("parseSize(%q): %v, want errSize", bad, err)
		}
	}
	var n int64
	f := sizeFlag{n: &n, auto: true}
	if err := f.Set("auto"); err != nil || n != -1 || f.String() != "auto" {
		t.Errorf("Set(auto): %v, n=%d, String %q", err, n, f.String())
	}
	if err := (sizeFlag{n: &n}).Set("auto"); err == nil {
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
