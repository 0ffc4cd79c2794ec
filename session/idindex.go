package session

import (
	"hash/maphash"
	"slices"
	"sync/atomic"
)

// idIndex maps entry ids to their Seq for one Tree, as Pi's byId map does
// (a repeated id points at the later entry). It is an open-addressing hash
// table of Seq+1 values (0: empty slot) with linear probing, holding no
// pointers: the ids themselves are read from the tree's entry table. A Go
// map[string]int of a 1 GiB session's quarter-million ids costs about
// 70 bytes per id and is scanned by every garbage collection; this costs
// 8 to 16 bytes per id and is never scanned.
//
// Snapshots of the tree (Tree.Snapshot) read the slots while the tree's
// Adds write them: slots are loaded and stored atomically, a slot filled
// after a snapshot holds a Seq past its length (passed over, as for
// Reuse), and a repeated id, which overwrites a slot, first copies the
// slots when a snapshot or a reusing tree shares them (shared).
type idIndex struct {
	seed  maphash.Seed
	slots []int32 // len is a power of two, at most half full
	n     int
	// shared is set while another tree (a Snapshot, a Reuse) reads slots.
	shared bool
}

// grow makes room for want ids in total without rehashing on the way.
func (x *idIndex) grow(entries *entryTable, want int) {
	size := 16
	for size < 2*want {
		size *= 2
	}
	if size <= len(x.slots) {
		return
	}
	if x.slots == nil {
		x.seed = maphash.MakeSeed()
	}
	old := x.slots
	x.slots, x.shared = make([]int32, size), false
	for i := range old {
		if v := atomic.LoadInt32(&old[i]); v != 0 {
			x.slots[x.free(entries, entries.id(int(v)-1))] = v
		}
	}
}

// free returns the slot holding id, or the empty slot where it belongs.
// A slot holding a Seq at or past entries.len() is passed over: an index
// shared with a longer tree (Tree.Reuse) serves a prefix of it, and an id
// only the longer tree holds is not in the prefix.
func (x *idIndex) free(entries *entryTable, id string) int {
	mask := len(x.slots) - 1
	i := int(maphash.String(x.seed, id)) & mask
	for {
		v := atomic.LoadInt32(&x.slots[i])
		if v == 0 || int(v) <= entries.len() && entries.strs.eq(entries.rows[v-1].id, id) {
			return i
		}
		i = (i + 1) & mask
	}
}

// get returns the Seq of the latest entry with id.
func (x *idIndex) get(entries *entryTable, id string) (int, bool) {
	if x.n == 0 {
		return 0, false
	}
	v := atomic.LoadInt32(&x.slots[x.free(entries, id)])
	return int(v) - 1, v != 0
}

// put records that the entry at seq (already in entries) has id; it
// reports whether the id was already present (the later entry wins).
func (x *idIndex) put(entries *entryTable, id string, seq int) (dup bool) {
	if 2*(x.n+1) > len(x.slots) {
		x.grow(entries, 2*(x.n+1))
	}
	i := x.free(entries, id)
	dup = atomic.LoadInt32(&x.slots[i]) != 0
	if !dup {
		x.n++
	} else if x.shared {
		// The slot names an entry that a sharer's lookups must still
		// find: overwrite it in a copy.
		x.slots, x.shared = slices.Clone(x.slots), false
	}
	atomic.StoreInt32(&x.slots[i], int32(seq+1))
	return dup
}
