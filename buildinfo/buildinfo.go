// Package buildinfo reports what a contextd binary was built from: the
// module version, the VCS commit, the Go toolchain and the SQLite library
// linked in. It reads runtime/debug.ReadBuildInfo, which `go build` and
// `go install` stamp into every binary (vcs.* settings only when built
// inside a git checkout). A release build (release/build.sh) sets the
// version, commit and commit time instead, with
//
//	-ldflags "-X contextd/buildinfo.version=v0.1.0 -X contextd/buildinfo.commit=HASH -X contextd/buildinfo.commitTime=RFC3339"
//
// and -buildvcs=false, so that the same commit gives the same bytes.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/mattn/go-sqlite3"
)

// Set by the linker in release builds (-X); "" otherwise.
var version, commit, commitTime string

// Info is the build description of the running binary.
type Info struct {
	// Version is the main module's version: a tag such as v1.2.0 from
	// `go install contextd@v1.2.0`, a pseudo-version stamped by `go build`
	// in a git checkout, or "(devel)" when neither applies.
	Version string `json:"version"`
	// Commit is the vcs.revision setting (full hash), "" when unknown.
	Commit string `json:"commit,omitempty"`
	// CommitTime is the vcs.time setting (RFC 3339), "" when unknown.
	CommitTime string `json:"commit_time,omitempty"`
	// Modified is the vcs.modified setting: the work tree had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// Go is the toolchain that built the binary, e.g. go1.26.8.
	Go string `json:"go"`
	// SQLite is the version of the SQLite library compiled in by
	// mattn/go-sqlite3, e.g. 3.50.4.
	SQLite string `json:"sqlite"`
}

// Read returns the running binary's Info.
func Read() Info {
	lib, _, _ := sqlite3.Version()
	in := Info{Version: "(devel)", Go: runtime.Version(), SQLite: lib}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		in = fromBuildInfo(in, bi)
	}
	return stamped(in, version, commit, commitTime)
}

// stamped returns in with the release stamp's fields that are set (the
// linker's -X values): they win over what Go's build info says.
func stamped(in Info, version, commit, commitTime string) Info {
	if version != "" {
		in.Version = version
	}
	if commit != "" {
		in.Commit, in.Modified = commit, false
	}
	if commitTime != "" {
		in.CommitTime = commitTime
	}
	return in
}

// fromBuildInfo fills in's version, Go toolchain and VCS fields from bi.
func fromBuildInfo(in Info, bi *debug.BuildInfo) Info {
	if bi.Main.Version != "" {
		in.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		in.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.time":
			in.CommitTime = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// String is the one-line form printed by `contextd --version`:
//
//	contextd v0.0.0-20261130225752-3c3340d1a2b4 (commit 3c3340d1a2b4…, 2026-11-30T22:57:52Z, modified) go1.26.8 sqlite 3.50.4
func (in Info) String() string {
	s := "contextd " + in.Version
	if in.Commit != "" {
		c := in.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		s += " (commit " + c
		if in.CommitTime != "" {
			s += ", " + in.CommitTime
		}
		if in.Modified {
			s += ", modified"
		}
		s += ")"
	}
	return fmt.Sprintf("%s %s sqlite %s", s, in.Go, in.SQLite)
}
