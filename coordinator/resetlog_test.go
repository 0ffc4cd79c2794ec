package coordinator_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"contextd/coordinator"
)

// TestResetLogFromFile: the reset log of the Pi-written fixtures, rebuilt
// from the file alone (their state database is empty). Expected values
// were computed by hand with an independent Python reading of the JSONL
// (walk parentId from the interval's last entry up to the closed
// window's boundary; bytes = len(line)+1; sha256 of the branch_summary's
// summary; note files/bytes from the snapshot after the manifest, or the
// replay of the branch's codex-context-note entries before the boundary).
func TestResetLogFromFile(t *testing.T) {
	type row = string // "mode state from→to first..last entries bytes notes/bytes writes sha[:12]"
	cases := []struct {
		name, mode string
		want       []row
	}{
		{"local-basic", "local", []row{
			"local completed 0→1 c96cd189..311c04e4 45 167787 3/1008 w3 ",
			"local completed 1→2 1ad99795..8f24378d 36 58287 4/1773 w3 ",
		}},
		{"tree-basic", "tree", []row{
			"tree completed 0→1 b3504875..42a59a75 35 80753 3/965 w3 5cfff73fa0da",
		}},
		{"tree-multi", "tree", []row{
			"tree completed 0→1 54f60945..71a889ca 31 51225 3/890 w3 ",
			"tree completed 1→2 51cdb5e3..121a7588 33 50155 4/1171 w2 ",
			"tree completed 2→3 75e0a5fc..c78abc2d 35 151801 4/1734 w2 ",
			"tree completed 3→4 48762130..03f60577 31 56075 5/2336 w2 e05379608424",
		}},
		{"tree-manual-summary", "tree", []row{
			"tree completed 0→1 facef333..212204a6 25 43016 2/808 w2 ",
			"tree completed 1→2 2f79d404..dcf0555d 47 84892 2/797 w1 ca38bf91f776",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := openFixture(t, c.name, c.mode)
			l, err := ts.svc.Rollovers(t.Context(), ts.id, "")
			if err != nil {
				t.Fatal(err)
			}
			var got []row
			for i, r := range l.Rollovers {
				if r.Source != "file" || r.RolloverID != "" || r.To == nil || r.Archived == nil {
					t.Fatalf("rollover %d = %+v, want a completed rollover rebuilt from the file", i, r)
				}
				sha := ""
				if i == len(l.Rollovers)-1 && len(r.SummarySHA256) == 64 {
					sha = r.SummarySHA256[:12]
				}
				if c.mode == "tree" && (r.SummarySHA256 == "" || r.ManifestEntryID == "" || r.SettledAt == nil || r.CommittedAt == nil) {
					t.Errorf("rollover %d: Tree fields missing: %+v", i, r)
				}
				got = append(got, fmt.Sprintf("%s %s %d→%d %s..%s %d %d %d/%d w%d %s", r.Mode, r.State, r.From.Number, r.To.Number,
					r.Archived.FirstEntryID, r.Archived.LastEntryID, r.Archived.Entries, r.Archived.Bytes, r.NoteFiles, r.NoteBytes, r.WindowNoteWrites, sha))
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("reset log (-want +got):\n%s", d)
			}
		})
	}
}

// TestResetLogBadManifest: tree-bad-manifests-small has 5 rollovers;
// expected.json calls manifest 1 valid and 2-5 invalid (archivedLeafId
// mismatch; branchBaseId mismatch and boundary not in the archive;
// summary not a branch_summary; archivedLeafId mismatch and missing). All
// five are listed (their boundaries are in the file); only the first has
// an archived interval, the others say why the archive is unavailable.
func TestResetLogBadManifest(t *testing.T) {
	ts := openFixture(t, "tree-bad-manifests-small", "tree")
	l, err := ts.svc.Rollovers(t.Context(), ts.id, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Rollovers) != 5 {
		t.Fatalf("rollovers = %d, want 5", len(l.Rollovers))
	}
	want := []string{
		"0d55058b 0→1 archived 451cdecb..93ac1a51 ",
		"35464eaa 1→2 invalid manifest (archivedLeafId is not the summary's fromId): the archive is unavailable",
		"f7c8a7e6 2→3 invalid manifest (branchBaseId is not the summary's parentId; the walk from archivedLeafId does not reach boundaryEntryId): the archive is unavailable",
		"f00a36d7 3→4 invalid manifest (summaryEntryId is not a branch_summary): the archive is unavailable",
		"fcf73426 4→5 invalid manifest (archivedLeafId is not the summary's fromId; the walk from archivedLeafId does not reach boundaryEntryId): the archive is unavailable",
	}
	var got []string
	for _, r := range l.Rollovers {
		line := fmt.Sprintf("%s %d→%d ", r.ManifestEntryID, r.From.Number, r.To.Number)
		if r.Archived != nil {
			line += fmt.Sprintf("archived %s..%s ", r.Archived.FirstEntryID, r.Archived.LastEntryID)
		}
		got = append(got, line+r.Reason)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
	for i, m := range ts.exp.Manifests {
		if m.Valid != (l.Rollovers[i].Archived != nil) {
			t.Errorf("manifest %s: expected.json valid %v, reset log archived %v", m.ManifestEntryID, m.Valid, l.Rollovers[i].Archived != nil)
		}
	}
}

// TestRolloverQualityMetrics: a Local new_context at the end of
// local-basic closes window 2, which wrote 2 notes (an independent
// Python count of codex-context-note entries from the leaf up to boundary
// 177c1e63): one observation of 2 note writes, no reset without notes,
// the hint's bytes observed, no cap hit (4 notes, short paths). The cut
// of window 0 observes its 1433 dropped identifiers.
func TestRolloverQualityMetrics(t *testing.T) {
	ts := openFixture(t, "local-basic", "local")
	ans, err := ts.svc.Windows(t.Context(), ts.id, coordinator.WindowsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	m := ts.metrics
	var h dto.Metric
	if err := m.WindowNoteWrites.WithLabelValues("local").(prometheus.Histogram).Write(&h); err != nil {
		t.Fatal(err)
	}
	if h.Histogram.GetSampleCount() != 1 || h.Histogram.GetSampleSum() != 2 {
		t.Errorf("note writes: %d samples, sum %v; want 1, 2", h.Histogram.GetSampleCount(), h.Histogram.GetSampleSum())
	}
	if n := counterValue(t, m.ResetsWithoutNotes.WithLabelValues("local")); n != 0 {
		t.Errorf("resets without notes = %v", n)
	}
	hint := ans.Append[0].Content[strings.Index(ans.Append[0].Content, "Recent notes"):strings.LastIndex(ans.Append[0].Content, "\n</context_window>")]
	var hb dto.Metric
	if err := m.HintBytes.Write(&hb); err != nil {
		t.Fatal(err)
	}
	if hb.Histogram.GetSampleCount() != 1 || hb.Histogram.GetSampleSum() != float64(len(hint)) || counterValue(t, m.HintCapHits) != 0 {
		t.Errorf("hint bytes: %d samples, sum %v, want %d; cap hits %v", hb.Histogram.GetSampleCount(), hb.Histogram.GetSampleSum(), len(hint), counterValue(t, m.HintCapHits))
	}
	if _, err := ts.svc.WindowCutOf(t.Context(), ts.id, "e636b0b7-d739-4a87-ad1c-80eb5320dfff", ""); err != nil {
		t.Fatal(err)
	}
	var cd dto.Metric
	if err := m.CutDropped.Write(&cd); err != nil {
		t.Fatal(err)
	}
	if cd.Histogram.GetSampleCount() != 1 || cd.Histogram.GetSampleSum() != 1433 {
		t.Errorf("cut dropped: %d samples, sum %v", cd.Histogram.GetSampleCount(), cd.Histogram.GetSampleSum())
	}
}
