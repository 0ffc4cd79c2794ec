package buildinfo

import (
	"runtime"
	"strings"
	"testing"
)

// TestRead checks the fields a test binary can know for sure: the Go
// toolchain is the one running the test, and the SQLite library is a 3.x
// release (mattn/go-sqlite3 v1.14.53 bundles SQLite 3.5x).
func TestRead(t *testing.T) {
	in := Read()
	if in.Go != runtime.Version() {
		t.Errorf("Go = %q, want %q", in.Go, runtime.Version())
	}
	if !strings.HasPrefix(in.SQLite, "3.") {
		t.Errorf("SQLite = %q, want a 3.x version", in.SQLite)
	}
	if in.Version == "" {
		t.Error("Version is empty; want a module version or (devel)")
	}
}

func TestString(t *testing.T) {
	in := Info{Version: "v1.2.0", Commit: "0123456789abcdef0123", CommitTime: "2026-11-30T22:57:52Z", Modified: true, Go: "go1.26.8", SQLite: "3.50.4"}
	want := "contextd v1.2.0 (commit 0123456789ab, 2026-11-30T22:57:52Z, modified) go1.26.8 sqlite 3.50.4"
	if got := in.String(); got != want {
		t.Errorf("String() = %q\nwant       %q", got, want)
	}
	in = Info{Version: "(devel)", Go: "go1.26.8", SQLite: "3.50.4"}
	if got, want := in.String(), "contextd (devel) go1.26.8 sqlite 3.50.4"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestStamped: a release build's -X values replace the version, commit
// and commit time Go's build info gave, and a stamped commit is not
// "modified" (release/build.sh builds with -buildvcs=false from a commit).
func TestStamped(t *testing.T) {
	in := Info{Version: "(devel)", Commit: "aaaa", Modified: true, Go: "go1.26.8", SQLite: "3.50.4"}
	got := stamped(in, "v0.1.0", "0123456789abcdef0123", "2026-12-01T12:00:00Z")
	if want := "contextd v0.1.0 (commit 0123456789ab, 2026-12-01T12:00:00Z) go1.26.8 sqlite 3.50.4"; got.String() != want {
		t.Errorf("stamped = %q, want %q", got.String(), want)
	}
	if got := stamped(in, "", "", ""); got != in {
		t.Errorf("no stamp changed %+v to %+v", in, got)
	}
}
