package store

import "sync"

// One goroutine per index builds the search frame filters (framefilter.go) of
// every session, in the order their syncs asked (kickFilters): a bounded
// channel queue of sessions, each in it at most once (frameFilters.queued,
// cleared when the builder takes it, so a sync during the build queues it
// again). A sync that finds the queue full waits for the builder to take
// one. Filters only skip frames, so a session whose filters are not built
// yet is searched by reading its frames. After a session's filters, the
// builder compresses its raw frames (framecompress.go).

// filterQueueLen bounds the sessions waiting for the filter builder.
const filterQueueLen = 64

// filterBuilder is an index's filter builder, started by its first kick.
type filterBuilder struct {
	start sync.Once
	stop  sync.Once
	queue chan *Session
	done  chan struct{} // closed by Close: the builder returns
	// work counts sessions queued and not yet built (filtersIdle).
	work sync.WaitGroup
}

// queueFilters hands s to the builder, starting it on first use.
func (x *Index) queueFilters(s *Session) {
	f := &x.filters
	f.start.Do(func() {
		f.queue, f.done = make(chan *Session, filterQueueLen), make(chan struct{})
		x.bg.Add(1)
		go x.buildFilters()
	})
	f.work.Add(1)
	select {
	case f.queue <- s:
	case <-f.done:
		s.filters.queued.Store(false)
		f.work.Done()
	}
}

// buildFilters is the builder: it extends the filters of each session
// taken from the queue until Close.
func (x *Index) buildFilters() {
	defer x.bg.Done()
	lowerThisThread("filter builder") // background work (background.go)
	f := &x.filters
	for {
		select {
		case s := <-f.queue:
			s.filters.queued.Store(false)
			if err := s.buildFrameFilters(); err != nil && !x.closing.Load() {
				x.log.Warn("search frame filters not built; searches read the whole text", "path", s.path, "err", err)
			}
			if err := s.compressFrames(); err != nil && !x.closing.Load() {
				x.log.Warn("item text frames not compressed; they stay raw", "path", s.path, "err", err)
			}
			// The filters added and the raw frames compressed (the raw file
			// removed) change the session's derived bytes after the sync
			// measured them: measure it again (budget.go).
			x.grew(s.path)
			f.work.Done()
		case <-f.done:
			for {
				select {
				case s := <-f.queue:
					s.filters.queued.Store(false)
					f.work.Done()
				default:
					return
				}
			}
		}
	}
}

// stopFilters makes the builder return (Close): a build in progress stops
// at its next segment (Index.closing).
func (x *Index) stopFilters() {
	f := &x.filters
	f.start.Do(func() { f.done = make(chan struct{}) }) // never started: nothing to stop
	f.stop.Do(func() { close(f.done) })
}

// filtersIdle waits until every session queued has been built (tests and
// benchmarks).
func (x *Index) filtersIdle() { x.filters.work.Wait() }

// FiltersIdle waits until the filter builder has built every session
// queued so far: for tests and benchmarks of other packages that measure
// a request (allocations, time) and must not count the builder's work,
// which a sync starts in the background.
func (x *Index) FiltersIdle() { x.filtersIdle() }
