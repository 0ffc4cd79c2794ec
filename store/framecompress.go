package store

import (
	"os"
	"runtime"
)

// compressFrames compresses the raw frames of s's text (rawframes.go) into
// its frame file and publishes them, on the filter builder's thread
// (filterbuilder.go: lowered below requests, background.go), after the
// filters of the same frames are built. Frames a sync writes raw meanwhile
// are compressed by the next pass; the raw file is retired once every
// frame is compressed. A reset of the text (filters.gen) or Close stops
// it; what it wrote past the published frames is then either the replaced
// generation's (removed with it) or found again by a load (loadFrames).
func (s *Session) compressFrames() error {
	if beforeFrameCompression != nil && !beforeFrameCompression(s) {
		return nil
	}
	if s.forgotten.Load() {
		return nil // Index.Forget: its files are gone
	}
	for {
		g := s.filters.gen.Load()
		c, release := s.hold()
		t := c.view.text
		if t == nil || t.raw == nil || c.view.filters.gen != g || !t.raw.of(c.files) {
			// Nothing raw, a reset, or the text of a generation
			// Forget replaced (its files are gone with it).
			release()
			return nil
		}
		// Under filters.mu, as a filter build: a reset, an eviction or a
		// Rebuild takes it after moving filters.gen on, so none removes
		// the files while this writes them, and this opens none of
		// theirs after (it checks the generation first).
		s.filters.mu.Lock()
		var ends []int64
		var err error
		if s.filters.gen.Load() == g {
			ends, err = s.compressRaw(t, g)
		}
		s.filters.mu.Unlock()
		release()
		if err != nil || ends == nil {
			return err
		}
		if done, err := s.publishCompressed(t, g, ends); done || err != nil {
			return err
		}
	}
}

// beforeFrameCompression, when set (tests), runs before the builder
// compresses a session's raw frames; false leaves them raw.
var beforeFrameCompression func(s *Session) bool

// betweenFrameCompression, when set (tests), runs before compressRaw
// compresses frame f, with filters.mu held.
var betweenFrameCompression func(s *Session, f int)

// compressRaw compresses the raw frames of t, [len(t.ends), t.frames),
// appending them to t's frame file and their ends to its frame index, and
// returns their ends (nil when stopped by a reset or Close).
func (s *Session) compressRaw(t *textSnap, g uint64) ([]int64, error) {
	k := len(t.ends)
	var end int64
	if k > 0 {
		end = t.ends[k-1]
	}
	rf, err := openText(t.raw.path)
	if err != nil {
		return nil, err
	}
	defer rf.Close()
	f, err := os.OpenFile(t.path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	w := &frameWriter{f: f, end: end, ends: make([]int64, 0, t.frames-k)}
	raw := make([]byte, frameSize)
	for fr := k; fr < t.frames; fr++ {
		if betweenFrameCompression != nil {
			betweenFrameCompression(s, fr)
		}
		if s.filters.gen.Load() != g || s.x.closing.Load() {
			return nil, nil
		}
		// Yield between frames (about 20 µs each), as the filter
		// builder does: a /context runnable meanwhile goes first.
		if !yieldToUrgent() {
			runtime.Gosched()
		}
		if err := readRawFrame(rf, t.raw, fr, raw); err != nil {
			return nil, err
		}
		if err := w.flushFrame(raw); err != nil {
			return nil, err
		}
	}
	if err := w.finish(); err != nil {
		return nil, err
	}
	if err := writeFrameIndexTo(t.index, k, w.ends); err != nil {
		return nil, err
	}
	return w.ends, nil
}

// publishCompressed publishes the frames of t compressed from its raw
// file (ends, from frame len(t.ends) on) unless the text changed since t;
// done is true when no frame is left raw (the raw file is retired) or the
// text changed.
func (s *Session) publishCompressed(t *textSnap, g uint64, ends []int64) (done bool, err error) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.filters.gen.Load() != g || s.textEpoch != t.epoch || s.raw != t.raw || len(s.frameEnds) != len(t.ends) {
		return true, nil
	}
	s.mu.Lock()
	s.frameEnds = append(s.frameEnds, ends...)
	var old *rawFile
	if s.frames == len(s.frameEnds) {
		old, s.raw = s.raw, nil
	}
	s.publishLocked()
	s.mu.Unlock()
	if old == nil {
		return false, nil
	}
	return true, old.retire()
}
