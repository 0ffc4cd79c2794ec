package inspect

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Summary writes the text summary of f: header, entry counts by type,
// leaf and active branch, window boundaries (* = on the active branch),
// archive manifests (valid, or "invalid: <reasons>" with the reasons of
// the archive package, as GET /v1/sessions reports them in its
// invalid_archive problems) and skipped lines.
func Summary(w io.Writer, f *File) error {
	t := f.Tree
	fmt.Fprintf(w, "file:      %s\n", f.Path)
	fmt.Fprintf(w, "bytes:     %d (%d indexed; %d in flight)\n", f.Size, f.Next, f.Size-f.Next)
	h := t.Header
	fmt.Fprintf(w, "session:   %s (version %d)\ncwd:       %s\ncreated:   %s\n", h.ID, h.Version, h.Cwd, h.Timestamp)
	if h.ParentSession != "" {
		fmt.Fprintf(w, "parent:    %s\n", h.ParentSession)
	}
	fmt.Fprintf(w, "entries:   %d\n", t.Len())
	counts := map[string]int{}
	for i := range t.Len() {
		e := t.Entry(i)
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
	fmt.Fprintf(w, "leaf:      %s\nbranch:    %d entries (%d in context)", t.Leaf(), len(f.Branch), len(t.ContextEntries(f.Branch)))
	if f.Cycle {
		fmt.Fprint(w, " [parent cycle]")
	}
	fmt.Fprintln(w)
	onBranch := map[int]bool{}
	for _, s := range f.Branch {
		onBranch[s] = true
	}
	for i := range t.Len() {
		e := t.Entry(i)
		if e.IsBoundary() {
			mark := " "
			if onBranch[e.Seq] {
				mark = "*"
			}
			fmt.Fprintf(w, "window %s  #%d %s (boundary %s, line %d)\n", mark, e.Window.WindowNumber, e.Window.CurrentWindowID, e.ID, e.Line)
		}
	}
	invalid := 0
	for i := range f.Archives.Manifests {
		m := &f.Archives.Manifests[i]
		e := t.Entry(m.Seq)
		if m.Valid {
			fmt.Fprintf(w, "archive manifest %s (line %d): valid, window %s, summary %s, %d entries archived\n", m.EntryID, e.Line, m.Data.WindowID, m.Data.SummaryEntryID, len(m.Archived))
		} else {
			invalid++
			fmt.Fprintf(w, "archive manifest %s (line %d): invalid: %s\n", m.EntryID, e.Line, strings.Join(m.Reasons, ", "))
		}
	}
	if n := len(f.Archives.Manifests); n > 0 {
		fmt.Fprintf(w, "archives:  %d valid, %d invalid", n-invalid, invalid)
		if invalid > 0 {
			fmt.Fprint(w, " (an invalid archive is unavailable to history; its summary stays visible)")
		}
		fmt.Fprintln(w)
	}
	if len(f.Stats.Skipped) == 0 {
		fmt.Fprintln(w, "skipped:   none")
	} else {
		fmt.Fprintln(w, "skipped:")
		for _, pr := range f.Stats.Problems {
			fmt.Fprintf(w, "  line %d: %s\n", pr.Line, pr.Reason)
		}
	}
	return nil
}
