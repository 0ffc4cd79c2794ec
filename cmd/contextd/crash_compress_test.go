package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rawAndFrames finds in texts/ a raw frame file of generation 0
// (N.rawF) and returns it, N's files' common path (texts/N) and the size
// of N.s2 ("", "", -1 when no raw file is there; -1 when no N.s2).
func rawAndFrames(texts string) (raw, base string, frameBytes int64) {
	des, _ := os.ReadDir(texts)
	for _, de := range des {
		id, ext, ok := strings.Cut(de.Name(), ".raw")
		if !ok || strings.Contains(id, ".") || strings.Contains(ext, ".") {
			continue
		}
		raw, base = filepath.Join(texts, de.Name()), filepath.Join(texts, id)
		if fi, err := os.Stat(base + ".s2"); err == nil {
			return raw, base, fi.Size()
		}
		return raw, base, -1
	}
	return "", "", -1
}

// waitCompressed waits until no raw frame file is left in texts/ (the
// builder compressed every frame) or fails after a minute.
func waitCompressed(t *testing.T, c *child, texts string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if raw, _, _ := rawAndFrames(texts); raw == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("raw frames left in %s after a minute\n%s", texts, c.log())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCrashMidCompression SIGKILLs contextd while its filter builder
// compresses the raw item-text frames of a session it indexed whole (the
// sync had ended: the frame file N.s2 has compressed bytes, texts/N.raw0
// is still there). In "append", a catch-up of 8 MiB (4 under -race) is
// synced during the first pass, into the same raw file, and the kill
// lands once that pass published its frames (their ends in N.s2x) and the
// next one compresses the catch-up's. The restart loads the compressed
// prefix N.s2x covers and the raw rest without re-indexing or ingesting a
// byte, answers as a cold index does, and compresses the rest to the same
// frame file and frame index as the cold index's.
func TestCrashMidCompression(t *testing.T) {
	for _, appendDuring := range []bool{false, true} {
		t.Run(map[bool]string{false: "indexed", true: "append"}[appendDuring], func(t *testing.T) {
			crashMidCompression(t, appendDuring)
		})
	}
}

func crashMidCompression(t *testing.T, appendDuring bool) {
	target, more := int64(32<<20), int64(8<<20)
	if raceEnabled() {
		target, more = 12<<20, 4<<20
	}
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions")
	if err := os.MkdirAll(sessions, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(sessions, "big.jsonl")
	big := genBigSession(t, path, target+more)
	all, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first := all
	if appendDuring {
		first = all[:bytes.LastIndexByte(all[:target], '\n')+1]
		if err := os.WriteFile(path, first, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	state := filepath.Join(dir, "state")
	texts := filepath.Join(state, "index", "texts")
	a := startChild(t, sessions, state)
	go a.do(http.MethodGet, "/v1/sessions/"+bigSessionID, nil) // indexes it; fails when killed
	deadline := time.Now().Add(90 * time.Second)
	for {
		if raw, _, n := rawAndFrames(texts); raw != "" && n > 0 {
			break // the sync ended, the compression runs
		}
		if time.Now().After(deadline) {
			t.Fatalf("no compression seen within 90 s\n%s", a.log())
		}
		time.Sleep(100 * time.Microsecond)
	}
	if appendDuring {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(all[len(first):]); err != nil {
			t.Fatal(err)
		}
		f.Close()
		caught := make(chan struct{})
		go func() { a.do(http.MethodGet, "/v1/sessions/"+bigSessionID, nil); close(caught) }() // the catch-up
		<-caught
		for {
			raw, base, _ := rawAndFrames(texts)
			if raw == "" {
				t.Fatalf("every frame was compressed before the kill: nothing was tested\n%s", a.log())
			}
			if fi, err := os.Stat(base + ".s2x"); err == nil && fi.Size() > 0 {
				break // a pass published its frames, the next one runs
			}
			if time.Now().After(deadline) {
				t.Fatalf("no frame index written within 90 s\n%s", a.log())
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	a.checkLog()
	raw, base, frameBytes := rawAndFrames(texts)
	if raw == "" || frameBytes <= 0 {
		t.Fatalf("the kill landed after the compression (raw file %q, frame file %d bytes): nothing was tested", raw, frameBytes)
	}
	crashed := readIndexRow(t, filepath.Join(state, "index"), "big.jsonl")
	if crashed.BytesIndexed != big.Size {
		t.Fatalf("committed %d of %d bytes: the kill was not after the sync", crashed.BytesIndexed, big.Size)
	}
	var compressed int64
	if fi, err := os.Stat(base + ".s2x"); err == nil {
		compressed = fi.Size() / 8
	}
	if appendDuring && compressed == 0 {
		t.Fatal("no compressed prefix in the frame index at the kill: nothing was tested")
	}
	t.Logf("killed with %d bytes of compressed frames written, %d frames in the frame index", frameBytes, compressed)

	b := startChild(t, sessions, state)
	c := startChild(t, sessions, filepath.Join(dir, "cold"))
	b.must(http.MethodGet, "/v1/sessions/"+bigSessionID, nil)
	c.must(http.MethodGet, "/v1/sessions/"+bigSessionID, nil)
	metrics := string(b.must(http.MethodGet, "/metrics", nil))
	for _, l := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(l, "contextd_index_reindex_total{") && !strings.HasSuffix(l, " 0") {
			t.Errorf("the restart re-indexed: %s", l)
		}
	}
	if got := metricValue(metrics, "contextd_index_bytes_ingested_total"); got > 0 {
		t.Errorf("the restart ingested %v bytes, want none (the index was whole)", got)
	}
	if strings.Contains(b.log(), "re-indexing") || strings.Contains(b.log(), "level=WARN") || strings.Contains(b.log(), `"level":"WARN"`) {
		t.Errorf("the restart logged:\n%s", b.log())
	}

	mid := big.Windows[len(big.Windows)/2]
	reqs := []struct {
		path string
		body any
	}{
		{"/alpha/history/v2/search_contents", codex(bigSessionID, map[string]any{"query": "needle-", "limit": 25})},
		{"/alpha/history/v2/search_contents", codex(bigSessionID, map[string]any{"query": "crash resume", "limit": 25, "recent_first": true})},
		{"/alpha/history/v2/search_contents", codex(bigSessionID, map[string]any{"query": "zz-no-such-text"})},
		{"/alpha/history/v2/list_items", codex(bigSessionID, map[string]any{"window_id": mid, "limit": 25})},
		{"/alpha/history/v2/list_items", codex(bigSessionID, map[string]any{"window_id": big.Windows[len(big.Windows)-1], "limit": 25, "recent_first": true})},
	}
	compare := func(when string) {
		for _, r := range reqs {
			want := c.must(http.MethodPost, r.path, r.body)
			if got := b.must(http.MethodPost, r.path, r.body); !bytes.Equal(got, want) {
				t.Errorf("%s: %s %v: resumed answer != cold answer\nresumed: %.600s\ncold:    %.600s", when, r.path, r.body, got, want)
			}
		}
	}
	compare("after the restart")
	waitCompressed(t, b, texts)
	waitCompressed(t, c, filepath.Join(dir, "cold", "index", "texts"))
	compare("once compressed")
	b.stop()
	c.stop()

	for _, ext := range []string{".s2", ".s2x"} {
		name := filepath.Base(base) + ext
		got, err1 := os.ReadFile(filepath.Join(texts, name))
		want, err2 := os.ReadFile(filepath.Join(dir, "cold", "index", "texts", name))
		if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
			t.Errorf("%s after the restart's compression: %d bytes (%v), cold index's %d bytes (%v), equal %v", name, len(got), err1, len(want), err2, bytes.Equal(got, want))
		}
	}
}
