package main

import (
	"fmt"
	"io"
	"os"
	"sort"

	"contextd/session"
)

// inspect prints a human-readable summary of one session file: header,
// entry counts by type, leaf, active-branch length, windows, archive
// manifests and skipped lines with their reasons. It only reads the file.
func inspect(w io.Writer, path string, maxLine int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file; inspect reads a session .jsonl file", path)
	}
	var p session.Parser
	// Read up to the size seen now: a file that grows meanwhile is read as it was.
	tree, next, st, err := session.Feed(f, &p, nil, 0, fi.Size(), maxLine, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "file:      %s\n", path)
	if fi != nil {
		fmt.Fprintf(w, "bytes:     %d (%d indexed; %d in flight)\n", fi.Size(), next, fi.Size()-next)
	}
	if p.NotPi {
		fmt.Fprintln(w, "status:    not a Pi session (the first parsed line is not a session header with a string id)")
		return nil
	}
	if tree == nil && len(st.Skipped) > 0 {
		fmt.Fprintf(w, "status:    not a Pi session (no session header; %d lines skipped)\n", st.Lines)
		return nil
	}
	if tree == nil {
		fmt.Fprintln(w, "status:    empty (no complete header line)")
		return nil
	}
	h := tree.Header
	fmt.Fprintf(w, "session:   %s (version %d)\ncwd:       %s\ncreated:   %s\n", h.ID, h.Version, h.Cwd, h.Timestamp)
	if h.ParentSession != "" {
		fmt.Fprintf(w, "parent:    %s\n", h.ParentSession)
	}
	fmt.Fprintf(w, "entries:   %d\n", tree.Len())
	counts := map[string]int{}
	for _, e := range tree.Entries {
		k := e.Type
		if e.CustomType != "" {
			k += ":" + e.CustomType
		} else if e.Role != "" {
			k += ":" + e.Role
		}
		counts[k]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %-48s %d\n", k, counts[k])
	}
	branch, cycle, _ := tree.Branch("")
	fmt.Fprintf(w, "leaf:      %s\nbranch:    %d entries (%d in context)", tree.Leaf(), len(branch), len(tree.ContextEntries(branch)))
	if cycle {
		fmt.Fprint(w, " [parent cycle]")
	}
	fmt.Fprintln(w)
	onBranch := map[int]bool{}
	for _, s := range branch {
		onBranch[s] = true
	}
	for _, e := range tree.Entries {
		if e.IsBoundary() {
			mark := " "
			if onBranch[e.Seq] {
				mark = "*"
			}
			fmt.Fprintf(w, "window %s  #%d %s (boundary %s, line %d)\n", mark, e.Window.WindowNumber, e.Window.CurrentWindowID, e.ID, e.Line)
		}
		if e.Type == session.TypeCustom && e.CustomType == session.CustomTypeTreeArchive {
			fmt.Fprintf(w, "archive manifest %s (line %d)\n", e.ID, e.Line)
		}
	}
	if len(st.Skipped) == 0 {
		fmt.Fprintln(w, "skipped:   none")
	} else {
		fmt.Fprintln(w, "skipped:")
		for _, pr := range st.Problems {
			fmt.Fprintf(w, "  line %d: %s\n", pr.Line, pr.Reason)
		}
	}
	return nil
}
