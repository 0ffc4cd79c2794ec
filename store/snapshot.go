package store

import (
	"context"
	"sync/atomic"
)

// Readers of a session read an immutable snapshot of its index, published
// by the sync that made it (docs/design.md §2 "Snapshots"), and hold no lock
// while they read: a search that waits for a scan slot, or scans every
// frame of a 1 GiB session for a second, delays no sync, and a sync delays
// no reader. A snapshot stays valid however long it is read:
//   - the tree is a session.Tree Snapshot (later entries are added past
//     its length or into new arrays);
//   - the item table, frame ends and name table are slices whose elements
//     are never written once published (appends go past their length);
//   - the text tail, stats and state strings are replaced, never modified;
//   - the files of the snapshot's text are never rewritten in place: a
//     reset writes the next text under the next generation's names and
//     removes the replaced files once no reader holds them (textfiles.go;
//     Read holds them for its callback), so a reader reads what its
//     snapshot describes; only a Rebuild removes files under readers,
//     which are then told the file changed (ErrFileChanged);
//   - frame filters are consulted only while their generation is the
//     snapshot's (filterSnap).
//
// Every publish numbers its snapshot with the next generation
// (View.Generation), from one counter for the whole process, so two views
// with the same generation are the same published state (ReadTree's
// preview view has a number of its own): a cache of answers derived from
// a view may key them by session and generation alone.

// sessionSnap is one published state of a session: what Read and ReadTree
// hand their callbacks.
type sessionSnap struct {
	view View
	// files is the generation of text files view reads (nil: none).
	files *textFiles
	// preview is the tree a cold index serves before its items are
	// built (ReadTree; nil: none).
	preview *treePreview
	// previewGen is the generation of the preview's view (0: none).
	previewGen uint64
	// refusedID is the header id of a file refused as too large
	// (toolarge.go; "": none), so FindByID still finds it.
	refusedID string
}

// generations numbers the published snapshots of every session (the last
// number taken; 0 is none).
var generations atomic.Uint64

// publishLocked publishes the fields under mu as the readers' snapshot.
// The caller holds mu for writing (and syncMu: only syncs write them).
func (s *Session) publishLocked() {
	v := View{s: s, Path: s.path, Items: s.items, names: s.names.list, Stats: s.stats, State: s.state, StateMsg: s.stateMsg,
		Bytes: s.next, FileSize: s.fileSize, InFlightTooLong: s.flightTooLong, text: s.textSnap(),
		filters: filterSnap{gen: s.filters.gen.Load(), path: s.filterPath(), count: s.filterCountPath()}, gen: generations.Add(1)}
	if v.State == "" {
		v.State = StateOK
	}
	if s.tree != nil {
		// A publish that added no entry keeps the tree snapshot: one per
		// state of the tree.
		if old := s.snap.Load(); old != nil && old.view.Tree != nil && old.view.Tree.Lineage() == s.tree && old.view.Tree.Len() == s.tree.Len() {
			v.Tree = old.view.Tree
		} else {
			v.Tree = s.tree.Snapshot()
		}
	}
	sn := &sessionSnap{view: v, files: s.files, preview: s.preview}
	if sn.preview != nil {
		sn.previewGen = generations.Add(1)
	}
	if s.refused != nil {
		sn.refusedID = s.refused.id
	}
	s.snap.Store(sn)
}

// publish is publishLocked for a caller that does not hold mu (it holds
// syncMu).
func (s *Session) publish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publishLocked()
}

// current returns the published snapshot (an empty one before the
// first).
func (s *Session) current() *sessionSnap {
	if p := s.snap.Load(); p != nil {
		return p
	}
	return &sessionSnap{view: View{s: s, Path: s.path, State: StateOK}}
}

// hold returns the published snapshot with its text files held (the
// function given back releases them): a reset does not remove them
// meanwhile. When the files of the snapshot it loaded are removed
// already, a newer snapshot is published (a reset retires files after
// publishing their replacement), except after Forget or Rebuild, whose
// last snapshot is returned unheld.
//
// The raw file of its text (rawframes.go), if any, is held too: it is
// removed once its frames are compressed and the snapshot that reads them
// compressed is published, so a snapshot whose raw file is gone is not
// the last one.
func (s *Session) hold() (*sessionSnap, func()) {
	for {
		c := s.current()
		if c.files == nil {
			return c, func() {}
		}
		if !c.files.acquire() {
			if s.snap.Load() == c {
				return c, func() {}
			}
			continue
		}
		raw := c.view.text.rawFile()
		if raw == nil {
			return c, c.files.release
		}
		if raw.acquire() {
			return c, func() { raw.release(); c.files.release() }
		}
		if s.snap.Load() == c {
			return c, c.files.release
		}
		c.files.release()
	}
}

// Read calls fn with a view of the session: its last published snapshot,
// one state of the file, valid for as long as fn keeps it. Read takes no
// lock and never waits.
func (s *Session) Read(fn func(v *View) error) error {
	c, release := s.hold()
	defer release()
	v := c.view
	v.SyncedAt = s.syncedAtTime()
	return fn(&v)
}

// ReadScan is Read for a reader that will search item text: it first
// waits for a scan slot (searches scanning at once are bounded, scanSlots)
// in the order of the callers, then takes the view, so that a search that
// waited reads the session as it is when it scans; Search on the view
// takes no second slot. everyFrame says the search reads every frame
// (UnfilteredQuery): the reader then also waits for a scanCores token and
// holds it for all of fn (deriving the branch and the search order,
// scanning, rendering the answer), so that such searches, however many,
// leave a core to /context and the syncs; fn then runs on a scan worker,
// a thread at a lower OS priority (background.go). Errors: ctx's error when it
// ends before a slot or a token is free (fn is not called).
func (s *Session) ReadScan(ctx context.Context, everyFrame bool, fn func(v *View) error) error {
	select {
	case scanSlots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-scanSlots }()
	if everyFrame {
		select {
		case scanCores <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		defer func() { <-scanCores }()
	}
	c, release := s.hold()
	defer release()
	v := c.view
	v.SyncedAt = s.syncedAtTime()
	v.scanHeld = true
	v.coreHeld = everyFrame
	if everyFrame {
		return runOnScanWorker(func() error { return fn(&v) }) // at a lower OS priority (background.go)
	}
	return fn(&v)
}

// ShareScan lets the searches of v, a view that Read gave for the same
// request, run under the scan slot, and the scan core if any, that holder
// (the view ReadScan gave) holds: a Tree copy's parent sessions are read
// with Read, and their archived windows are searched inside the copy's
// ReadScan callback. Without it such a search would wait for a second slot
// or core held by nobody but its own request: with two CPUs there is one
// core, and it would wait forever. The returned func takes the share back;
// call it before holder's callback returns.
func (v *View) ShareScan(holder *View) (undo func()) {
	scan, core := v.scanHeld, v.coreHeld
	v.scanHeld, v.coreHeld = holder.scanHeld, holder.coreHeld
	return func() { v.scanHeld, v.coreHeld = scan, core }
}

// ReadTree is Read for a reader of the entry tree only: while the items of
// a cold index are being built after a tree preview (Sync under TreeOnly),
// fn sees the preview's tree, with no Items (len 0), Bytes the bytes the
// preview covers and Stats its line counts. Otherwise it is Read.
func (s *Session) ReadTree(fn func(v *View) error) error {
	c, release := s.hold()
	defer release()
	p := c.preview
	if p == nil {
		v := c.view
		v.SyncedAt = s.syncedAtTime()
		return fn(&v)
	}
	return fn(&View{s: s, Path: s.path, Tree: p.tree, names: c.view.names, Stats: p.stats, State: StateOK,
		Bytes: p.next, FileSize: p.size, SyncedAt: p.at, gen: c.previewGen})
}

// ReadFor is ReadTree when ctx is marked by TreeOnly, else Read.
func (s *Session) ReadFor(ctx context.Context, fn func(v *View) error) error {
	if IsTreeOnly(ctx) {
		return s.ReadTree(fn)
	}
	return s.Read(fn)
}

// SessionID is the header id, "" before the header is indexed.
func (s *Session) SessionID() string {
	c := s.current()
	switch {
	case c.view.Tree != nil:
		return c.view.Tree.Header.ID
	case c.preview != nil:
		return c.preview.tree.Header.ID
	}
	return c.refusedID
}

// Len is the number of entries indexed for the session.
func (s *Session) Len() int {
	if t := s.current().view.Tree; t != nil {
		return t.Len()
	}
	return 0
}

// filterSnap is what a snapshot's searches read of the frame filters:
// their generation when it was published (a reset advances it; filters
// of another generation describe another text) and the .blk file.
type filterSnap struct {
	gen         uint64
	path, count string // the .blk file and its record count (.blkn)
}
