package reliability

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestIndexedBytesChanged: a file whose bytes already indexed change (same
// inode) is re-indexed at the next request, and the answers then equal a
// cold index of the new bytes (incremental = cold, rebuild equivalence):
// a same-size in-place rewrite (case-08), one that restores the old mtime
// (only ctime moves), one made while contextd was stopped, a line damaged
// in place, a file shrunk and grown again past its old size between two
// requests, and a torn append followed by more appends (case-07). A plain
// append is not a change (no re-index).
func TestIndexedBytesChanged(t *testing.T) {
	treeBasic := filepath.Join(piTreeDir, "tree-basic.jsonl")
	src, err := os.ReadFile(treeBasic)
	if err != nil {
		t.Fatal(err)
	}
	ends := lineEnds(src)
	// sameSize replaces, in the last user message (on the active branch,
	// so Local history serves it), the word "plan" by "QUOK": as many
	// bytes, other text.
	sameSize := func(b []byte) []byte {
		u := bytes.LastIndex(b, []byte(`"role":"user"`))
		i := bytes.Index(b[u:], []byte("write the plan into notes"))
		if u < 0 || i < 0 {
			t.Fatal("tree-basic's last user message changed")
		}
		out := bytes.Clone(b)
		copy(out[u+i+len("write the "):], "QUOK")
		return out
	}
	changed := func(r *changeRig, want float64) {
		t.Helper()
		if n := max(0, r.metric(`contextd_index_reindex_total{cause="changed_in_place"}`)); n != want {
			t.Errorf("reindex_total{cause=changed_in_place} = %v, want %v", n, want)
		}
	}
	cases := []struct {
		name    string
		change  func(r *changeRig) []byte // returns the new bytes
		reindex float64
	}{
		{"rewritten in place at the same size", func(r *changeRig) []byte {
			nb := sameSize(src)
			writeFile(t, r.path, nb)
			return nb
		}, 1},
		{"same size with the old mtime restored", func(r *changeRig) []byte {
			fi, err := os.Stat(r.path)
			if err != nil {
				t.Fatal(err)
			}
			nb := sameSize(src)
			writeFile(t, r.path, nb)
			if err := os.Chtimes(r.path, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
			return nb
		}, 1},
		{"rewritten while contextd was stopped", func(r *changeRig) []byte {
			r.stop()
			nb := sameSize(src)
			writeFile(t, r.path, nb)
			r.stack = startStack(t, r.Sessions, r.StateDir, stackOptions{})
			return nb
		}, 1},
		{"a line damaged in place", func(r *changeRig) []byte {
			nb := bytes.Clone(src)
			for i := ends[40]; i < ends[41]-1; i++ {
				nb[i] = 'x'
			}
			writeFile(t, r.path, nb)
			return nb
		}, 1},
		{"shrunk and grown past the old size", func(r *changeRig) []byte {
			// Between two requests: cut after 20 entries, then Pi (or a
			// restore) writes other entries up to beyond the old size.
			nb := append(bytes.Clone(src[:ends[20]]), src[ends[10]:]...)
			writeFile(t, r.path, nb)
			return nb
		}, 1},
		{"torn append then more appends", func(r *changeRig) []byte {
			// A failed write leaves 60 bytes of a line without "\n"; the
			// next entry fuses onto it and two more follow.
			tail := src[ends[41]:ends[45]]
			nb := append(bytes.Clone(src[:ends[41]]), src[ends[45]:ends[45]+60]...)
			nb = append(nb, tail...)
			writeFile(t, r.path, src[:ends[41]]) // indexed state: 41 entries
			r.state(t)
			writeFile(t, r.path, nb)
			return nb
		}, 0},
		{"appended only", func(r *changeRig) []byte {
			writeFile(t, r.path, src[:ends[40]])
			r.state(t)
			f, err := os.OpenFile(r.path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(src[ends[40]:])
			f.Close()
			return src
		}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newChangeRig(t, treeBasic, treeBasicID, true)
			time.Sleep(20 * time.Millisecond) // let mtime move (ns clocks; coarse file systems tick in ms)
			nb := tc.change(r)
			st := r.state(t)
			if st.State != "ok" {
				t.Fatalf("state %q", st.State)
			}
			changed(r, tc.reindex)
			sameAsCold(t, r, nb)
			if strings.Contains(string(nb), "QUOK") {
				var res struct {
					Items []any `json:"items"`
				}
				decode(t, r.must(http.StatusOK, http.MethodPost, codexPath("history/search_contents"), codexBody(r.id, "", map[string]any{"query": "QUOK"})), &res)
				if len(res.Items) == 0 {
					t.Errorf("search for the new text QUOK: no hit")
				}
			}
			// Rebuild equivalence after the change.
			before := r.must(http.StatusOK, http.MethodGet, "/v1/sessions/"+r.id+"/branch", nil)
			r.must(http.StatusOK, http.MethodPost, "/v1/index/rebuild", nil)
			if after := r.must(http.StatusOK, http.MethodGet, "/v1/sessions/"+r.id+"/branch", nil); !bytes.Equal(before, after) {
				t.Errorf("branch differs after rebuild:\n%s", firstDiff(before, after))
			}
		})
	}
}
