package memstore

import (
	"math"
	"math/bits"
)

// idSet is a set of job IDs that walks them from the highest down, so that
// a list by queue reads its page instead of the table (ADR 0026). IDs are
// handed out in order, so a queue's jobs crowd into few chunks of a bitmap;
// a chunk is dropped when its last ID leaves.
type idSet struct {
	chunks map[int64]*idChunk
	// lo and hi bound the chunk keys in use since the set was last empty:
	// the range a walk probes.
	lo, hi int64
	// last is the chunk of the last ID added or removed: IDs come in order,
	// so most calls find their chunk without the map.
	lastKey int64
	last    *idChunk
}

const (
	chunkShift = 12 // 4,096 IDs (512 bytes) a chunk
	chunkWords = 1 << chunkShift / 64
)

type idChunk struct {
	words [chunkWords]uint64
	n     int
}

// chunk returns the chunk of key k, or nil.
func (x *idSet) chunk(k int64) *idChunk {
	if x.last == nil || x.lastKey != k {
		x.lastKey, x.last = k, x.chunks[k]
	}
	return x.last
}

func (x *idSet) add(id int64) {
	k := id >> chunkShift
	c := x.chunk(k)
	if c == nil {
		if len(x.chunks) == 0 {
			x.chunks, x.lo, x.hi = map[int64]*idChunk{}, k, k
		}
		c = new(idChunk)
		x.chunks[k], x.lastKey, x.last = c, k, c
		x.lo, x.hi = min(x.lo, k), max(x.hi, k)
	}
	w, b := id&(1<<chunkShift-1)>>6, uint(id&63)
	if c.words[w]&(1<<b) == 0 {
		c.words[w] |= 1 << b
		c.n++
	}
}

func (x *idSet) remove(id int64) {
	k := id >> chunkShift
	c := x.chunk(k)
	if c == nil {
		return
	}
	w, b := id&(1<<chunkShift-1)>>6, uint(id&63)
	if c.words[w]&(1<<b) != 0 {
		c.words[w] &^= 1 << b
		if c.n--; c.n == 0 {
			delete(x.chunks, k)
			x.last = nil
		}
	}
}

// descending calls fn with each ID below before (every ID when before is
// 0), highest first, until fn returns false.
func (x *idSet) descending(before int64, fn func(int64) bool) {
	if len(x.chunks) == 0 {
		return
	}
	top := int64(math.MaxInt64)
	if before > 0 {
		top = before - 1
	}
	for k := min(top>>chunkShift, x.hi); k >= x.lo; k-- {
		c := x.chunks[k]
		if c == nil {
			continue
		}
		for w := chunkWords - 1; w >= 0; w-- {
			for word := c.words[w]; word != 0; {
				b := 63 - bits.LeadingZeros64(word)
				word &^= 1 << uint(b)
				if id := k<<chunkShift | int64(w)<<6 | int64(b); id <= top && !fn(id) {
					return
				}
			}
		}
	}
}
