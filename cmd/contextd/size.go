package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
	"golang.org/x/sys/unix"
)

// sizeHelp says how every size flag and variable is written
// (--memory-limit, --max-line-bytes, --max-body-bytes, CONTEXTD_MEMORY_LIMIT).
const sizeHelp = "write a number of bytes with an optional unit, such as 134217728, 128MiB or \"128 MiB\" (KiB, MiB, GiB: powers of 1024; kB, MB, GB: powers of 1000)"

// parseSize reads a size as the docs write it: a whole or decimal number
// with an optional unit, IEC (KiB, MiB, GiB, TiB; also Ki, Mi, Gi) or SI
// (B, kB, MB, GB, TB; also k, M, G), case-insensitive, with or without a
// space: "134217728", "128MiB", "128 MiB", "0.5GB". A leading minus is
// kept, so the caller's bounds check names a negative value. The units are
// go-humanize's ParseBytes (https://pkg.go.dev/github.com/dustin/go-humanize#ParseBytes).
// Errors: one sentence saying how to write a size; a value over
// math.MaxInt64 bytes is too large.
func parseSize(raw string) (int64, error) {
	s := strings.TrimSpace(raw)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimSpace(strings.TrimPrefix(s, "-"))
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, fmt.Errorf("%q is not a size; %s", raw, sizeHelp)
	}
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size; %s", raw, sizeHelp)
	}
	if n > math.MaxInt64 {
		return 0, fmt.Errorf("%q is too large; %s", raw, sizeHelp)
	}
	if neg {
		return -int64(n), nil
	}
	return int64(n), nil
}

// sizeValue is a flag.Value holding a size in bytes (parseSize).
type sizeValue[T int | int64] struct{ p *T }

func (v sizeValue[T]) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.FormatInt(int64(*v.p), 10)
}

func (v sizeValue[T]) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	if int64(T(n)) != n {
		return fmt.Errorf("%q is too large for this platform", s)
	}
	*v.p = T(n)
	return nil
}

// sizeVar defines a size flag name with default def, stored in p: a plain
// number of bytes or a number with a unit (parseSize).
func sizeVar[T int | int64](fs *flag.FlagSet, p *T, name string, def T, usage string) {
	*p = def
	fs.Var(sizeValue[T]{p}, name, usage)
}

// autoSizeValue is a size flag (parseSize) that also takes the word
// "auto", stored as -1; the caller replaces -1 by its automatic value.
type autoSizeValue struct{ p *int64 }

func (v autoSizeValue) String() string {
	if v.p != nil && *v.p < 0 {
		return "auto"
	}
	return sizeValue[int64](v).String()
}

func (v autoSizeValue) Set(s string) error {
	if strings.EqualFold(strings.TrimSpace(s), "auto") {
		*v.p = -1
		return nil
	}
	return sizeValue[int64](v).Set(s)
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
