package inspect

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"

	"contextd/archive"
	"contextd/session"
)

// TreeOptions tunes Tree.
type TreeOptions struct {
	// Expand draws every entry; by default a run of more than MaxRun
	// ordinary entries (messages, notes, model and thinking-level changes,
	// reminders) in a chain is drawn as one "… N entries" line.
	Expand bool
}

// MaxRun is the longest run of ordinary entries Tree draws one per line
// without TreeOptions.Expand.
const MaxRun = 3

// summaryWidth bounds the summary text quoted on a branch_summary line, in runes.
const summaryWidth = 60

// Tree draws the entry tree of f. Each line is one entry (or one collapsed
// run of ordinary entries): a first column with "*" for entries on the
// active branch (Pi getBranch from the last entry), then the tree drawing
// (a chain continues on the next line; a branch point's children are drawn
// with ├─/└─ in file order), the entry id and what the entry is. Window
// boundaries, branch summaries (with their text), archive manifests (valid,
// or invalid with the archive package's reasons), note snapshots,
// compactions, labels, branch points, the leaf and entries a manifest or a
// summary names are always drawn. Entries in a parent cycle, which no root
// reaches, are listed at the end.
func Tree(w io.Writer, f *File, opt TreeOptions) error {
	d := newDrawer(f, opt)
	t := f.Tree
	fmt.Fprintf(w, "session %s (v%d), %d entries, leaf %s\n", t.Header.ID, t.Header.Version, t.Len(), t.Leaf())
	valid := f.Archives.Valid()
	fmt.Fprintf(w, "archives: %d valid, %d invalid; windows on the active path: %d\n", valid, len(f.Archives.Manifests)-valid, d.activeWindows)
	fmt.Fprintln(w, "* = active path, root to leaf; … = ordinary entries collapsed (--expand draws them)")
	for _, r := range d.roots {
		d.chain(r, "", "")
	}
	var cyc []string
	for i := range t.Len() {
		if !d.seen[i] {
			cyc = append(cyc, t.ID(i))
		}
	}
	if len(cyc) > 0 {
		fmt.Fprintf(&d.out, "%d entries in a parent cycle, reached from no root: %s\n", len(cyc), strings.Join(cyc, ", "))
	}
	_, err := io.WriteString(w, d.out.String())
	return err
}

type drawer struct {
	f        *File
	opt      TreeOptions
	out      strings.Builder
	children [][]int
	roots    []int
	seen     []bool
	active   map[int]bool
	leaf     int
	// archivedBy: boundary Seq → valid manifest archiving its window.
	archivedBy map[int]*archive.Manifest
	// summaryOf: branch_summary Seq → the valid manifest owning it.
	summaryOf map[int]*archive.Manifest
	// claimedBy: branch_summary Seq → an invalid manifest naming it (the
	// summary stays visible to the model).
	claimedBy map[int]*archive.Manifest
	// named: entries a manifest or a summary names (archived leaf, base,
	// boundary, summary, fromId): always drawn.
	named         map[int]bool
	activeWindows int
}

func newDrawer(f *File, opt TreeOptions) *drawer {
	t := f.Tree
	n := t.Len()
	d := &drawer{f: f, opt: opt, children: make([][]int, n), seen: make([]bool, n), active: map[int]bool{},
		leaf: n - 1, archivedBy: map[int]*archive.Manifest{}, summaryOf: map[int]*archive.Manifest{}, claimedBy: map[int]*archive.Manifest{}, named: map[int]bool{}}
	for i := range t.Len() {
		e := t.Entry(i)
		p, ok := t.Lookup(e.ParentID)
		if e.ParentID == "" || !ok || p == i {
			d.roots = append(d.roots, i)
			continue
		}
		d.children[p] = append(d.children[p], i)
	}
	for _, s := range f.Branch {
		d.active[s] = true
		if t.Entry(s).IsBoundary() {
			d.activeWindows++
		}
	}
	name := func(id string) {
		if s, ok := t.Lookup(id); ok && id != "" {
			d.named[s] = true
		}
	}
	for i := range f.Archives.Manifests {
		m := &f.Archives.Manifests[i]
		if m.Valid {
			d.archivedBy[m.BoundarySeq] = m
			d.summaryOf[m.SummarySeq] = m
		} else if m.SummarySeq >= 0 {
			d.claimedBy[m.SummarySeq] = m
		}
		name(m.Data.ArchivedLeafID)
		name(m.Data.BoundaryEntryID)
		name(m.Data.SummaryEntryID)
	}
	for i := range t.Len() {
		if t.Type(i) == session.TypeBranchSummary {
			name(t.Entry(i).FromID())
		}
	}
	return d
}

// notable reports whether entry s is always drawn on its own line.
func (d *drawer) notable(s int) bool {
	e := d.f.Tree.Entry(s)
	if len(d.children[s]) != 1 || s == d.leaf || d.named[s] || d.f.Labels[e.ID] != "" {
		return true
	}
	if _, ok := d.f.Tree.Lookup(e.ParentID); e.ParentID != "" && !ok {
		return true // describe names the missing parent; a collapsed run would not
	}
	switch e.Type {
	case session.TypeMessage, session.TypeModelChange, session.TypeThinkingLevelChange:
		return false
	case session.TypeCustom:
		return e.CustomType != session.CustomTypeNote && e.CustomType != ""
	case session.TypeCustomMessage:
		return e.IsBoundary() || e.CustomType != session.CustomTypeWindow
	}
	return true
}

// kind is how a collapsed run counts an ordinary entry.
func kind(e *session.Entry) string {
	switch {
	case e.Type == session.TypeMessage && e.Role != "":
		return e.Role
	case e.CustomType == session.CustomTypeNote:
		return "note"
	case e.Type == session.TypeCustomMessage && e.Window != nil:
		return "reminder"
	case e.CustomType != "":
		return e.Type + ":" + e.CustomType
	}
	return e.Type
}

// chain draws the chain starting at s: the first line with prefix first,
// every later line of the chain with rest, and the subtrees of its branch
// point, if any.
func (d *drawer) chain(s int, first, rest string) {
	prefix := first
	var run []int
	flush := func() {
		if len(run) == 0 {
			return
		}
		if d.opt.Expand || len(run) <= MaxRun {
			for _, r := range run {
				d.line(r, prefix)
				prefix = rest
			}
		} else {
			d.collapsed(run, prefix)
			prefix = rest
		}
		run = run[:0]
	}
	for {
		d.seen[s] = true
		if d.notable(s) {
			flush()
			d.line(s, prefix)
			prefix = rest
		} else {
			run = append(run, s)
		}
		kids := d.children[s]
		if len(kids) == 1 && !d.seen[kids[0]] {
			s = kids[0]
			continue
		}
		flush()
		for i, k := range kids {
			if d.seen[k] {
				continue
			}
			if i == len(kids)-1 {
				d.chain(k, rest+"└─ ", rest+"   ")
			} else {
				d.chain(k, rest+"├─ ", rest+"│  ")
			}
		}
		return
	}
}

func (d *drawer) mark(s int) string {
	if d.active[s] {
		return "* "
	}
	return "  "
}

func (d *drawer) line(s int, prefix string) {
	fmt.Fprintf(&d.out, "%s%s%s  %s\n", d.mark(s), prefix, d.f.Tree.ID(s), d.describe(s))
}

func (d *drawer) collapsed(run []int, prefix string) {
	t := d.f.Tree
	counts := map[string]int{}
	for _, r := range run {
		counts[kind(new(t.Entry(r)))]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	first, last := run[0], run[len(run)-1]
	fmt.Fprintf(&d.out, "%s%s… %d entries %s..%s: %s\n", d.mark(first), prefix, len(run), t.ID(first), t.ID(last), strings.Join(parts, ", "))
}

func (d *drawer) describe(s int) string {
	t := d.f.Tree
	e := t.Entry(s)
	var b strings.Builder
	switch e.Type {
	case session.TypeMessage:
		b.WriteString(kind(&e))
		if e.StopReason == "aborted" || e.StopReason == "error" {
			b.WriteString(" (" + e.StopReason + ")")
		}
	case session.TypeCustomMessage:
		switch {
		case e.IsBoundary():
			fmt.Fprintf(&b, "── window #%d %s (boundary)", e.Window.WindowNumber, e.Window.CurrentWindowID)
			if m := d.archivedBy[s]; m != nil {
				fmt.Fprintf(&b, ", archived by manifest %s", m.EntryID)
			}
		case e.CustomType == session.CustomTypeWindow && e.Window != nil:
			fmt.Fprintf(&b, "context %s", e.Window.Kind)
		default:
			b.WriteString("custom message " + e.CustomType)
		}
	case session.TypeCustom:
		switch e.CustomType {
		case session.CustomTypeTreeArchive:
			d.describeManifest(&b, s)
		case session.CustomTypeNoteSnapshot:
			b.WriteString("note snapshot")
		case session.CustomTypeNote:
			b.WriteString("note")
		default:
			b.WriteString("custom " + e.CustomType)
		}
	case session.TypeBranchSummary:
		fmt.Fprintf(&b, "branch summary from %s", e.FromID())
		if e.FromHook {
			b.WriteString(" (by an extension)")
		}
		if m := d.summaryOf[s]; m != nil {
			fmt.Fprintf(&b, ", Tree summary of window %s (hidden from the model)", m.Data.WindowID)
		} else if m := d.claimedBy[s]; m != nil {
			fmt.Fprintf(&b, ", named by invalid manifest %s (stays visible)", m.EntryID)
		}
		fmt.Fprintf(&b, ": %q", clip(d.f.Summaries[s], summaryWidth))
	case session.TypeCompaction:
		fmt.Fprintf(&b, "compaction, first kept %s", e.FirstKeptEntryID())
	case session.TypeLabel:
		if e.Label() == "" {
			fmt.Fprintf(&b, "label cleared on %s", e.TargetID())
		} else {
			fmt.Fprintf(&b, "label %q on %s", e.Label(), e.TargetID())
		}
	case session.TypeSessionInfo:
		fmt.Fprintf(&b, "session name %q", e.Name())
	default:
		b.WriteString(e.Type)
	}
	if p := e.ParentID; p != "" {
		if _, ok := t.Lookup(p); !ok {
			fmt.Fprintf(&b, " (parent %s missing)", p)
		}
	}
	if l := d.f.Labels[e.ID]; l != "" {
		fmt.Fprintf(&b, " [label %q]", l)
	}
	if s == d.leaf {
		b.WriteString("  ← leaf")
	}
	return b.String()
}

func (d *drawer) describeManifest(b *strings.Builder, s int) {
	m := d.f.Archives.Manifest(s)
	if m == nil { // not reached: every manifest entry is in the index
		b.WriteString("archive manifest")
		return
	}
	if !m.Valid {
		fmt.Fprintf(b, "archive ✗ invalid: %s", strings.Join(m.Reasons, ", "))
		return
	}
	t := d.f.Tree
	first, last := t.ID(m.Archived[0]), t.ID(m.Archived[len(m.Archived)-1])
	fmt.Fprintf(b, "archive ✓ window %s: summary %s, %d entries %s..%s", m.Data.WindowID, m.Data.SummaryEntryID, len(m.Archived), first, last)
}

// clip returns the first line of s, cut to n runes with "…".
func clip(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
