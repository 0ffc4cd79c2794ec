package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
	"golang.org/x/sys/unix"
)

// sizeFlag is a flag.Value holding a byte count: a plain number of bytes
// (134217728), or a number with a unit as go-humanize's ParseBytes reads
// it: KiB, MiB, GiB, TiB are powers of 1024, kB, MB, GB, TB powers of
// 1000 (https://pkg.go.dev/github.com/dustin/go-humanize#ParseBytes), e.g.
// 4GiB or "512 MiB". A leading minus sign is kept (the flag's check
// refuses it with its own message). With auto set, the word "auto" is
// accepted too and stored as -1.
type sizeFlag struct {
	n    *int64
	auto bool
}

func (f sizeFlag) String() string {
	if f.n == nil {
		return "0"
	}
	if f.auto && *f.n < 0 {
		return "auto"
	}
	return strconv.FormatInt(*f.n, 10)
}

func (f sizeFlag) Set(s string) error {
	if f.auto && strings.EqualFold(strings.TrimSpace(s), "auto") {
		*f.n = -1
		return nil
	}
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*f.n = n
	return nil
}

// errSize is parseSize's error: what to write instead.
var errSize = errors.New("not a size in bytes; write a number of bytes such as 134217728, or one with a unit such as 128MiB or 4GiB")

// parseSize reads a byte count as sizeFlag does.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	neg := strings.HasPrefix(t, "-")
	if neg {
		t = t[1:]
	}
	u, err := humanize.ParseBytes(t)
	if err != nil || t == "" {
		return 0, errSize
	}
	if u > math.MaxInt64 {
		return 0, fmt.Errorf("%q is over %d bytes", s, int64(math.MaxInt64))
	}
	if neg {
		return -int64(u), nil
	}
	return int64(u), nil
}

// Bounds of the automatic index budget (--index-max-bytes auto,
// docs/operations.md "Disk budget of the index").
const (
	indexBudgetCap      = 4 << 30   // at most 4 GiB
	indexBudgetFloor    = 256 << 20 // at least 256 MiB
	indexBudgetFraction = 4         // a quarter of the free space
)

// autoIndexBudget is the default budget of the derived index: a quarter
// of the space free on the file system of dir (the index directory's
// parent) at start, at least indexBudgetFloor and at most indexBudgetCap;
// indexBudgetCap when the free space cannot be read.
func autoIndexBudget(dir string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return indexBudgetCap
	}
	free := int64(st.Bavail) * int64(st.Bsize) //nolint:unconvert // field types differ by OS
	return min(indexBudgetCap, max(indexBudgetFloor, free/indexBudgetFraction))
}
