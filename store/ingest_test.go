package store

import (
	"testing"

	"contextd/internal/hugemem"
)

// TestIngestBufsRecycle: a pooled ingestBufs keeps no raw file, frame
// file, descriptor or entry of the ingest that used it, and only small
// buffers are pooled (a frame buffer of 2 MiB is not; nor a large
// ingest's, which has a heap advisor).
func TestIngestBufsRecycle(t *testing.T) {
	ib := &ingestBufs{raw: &rawFile{}, rawFH: &lazyFile{}, pend: make([]pendingEntry, 3, 16), tail: []byte("tail"), parsed: 9}
	ib.pend[1].e.ID = "kept?"
	ib.text = &frameWriter{f: &lazyFile{}, rf: &lazyFile{}, raw: &rawFile{}, buf: make([]byte, 100, 200), ends: []int64{1}, out: []byte("o")}
	if !ib.recycle() {
		t.Fatal("small buffers not pooled")
	}
	w := ib.text
	if ib.raw != nil || ib.rawFH != nil || ib.parsed != 0 || len(ib.pend) != 0 || ib.pend[:2][1].e.ID != "" || len(ib.tail) != 0 ||
		w.f != nil || w.rf != nil || w.raw != nil || len(w.buf) != 0 || len(w.ends) != 0 || len(w.out) != 0 {
		t.Errorf("recycled buffers keep the last ingest's state: %+v, %+v", ib, w)
	}
	w.buf = make([]byte, 0, 2<<20)
	if ib.recycle() {
		t.Error("a 2 MiB frame buffer was pooled")
	}
	if (&ingestBufs{adv: &hugemem.HeapAdvisor{}}).recycle() {
		t.Error("a large ingest's buffers were pooled")
	}
}
