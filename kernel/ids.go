package kernel

import (
	"math/rand/v2"
	"sync"
	"time"
)

// The kernel names processes with UUIDv7 strings (RFC 9562): 48 bits of
// Unix milliseconds, 12 bits that order the ids made within one
// millisecond, and 62 random bits. Stores index processes by id, and ids
// that grow with time keep those indexes compact.
//
// The random bits come from math/rand/v2's global generator, which is
// ChaCha8 seeded from the operating system: unpredictable like a read of
// crypto/rand, without a system call per id. Naming a process is part of
// every start, so its cost counts.

// idGen makes UUIDv7s whose time parts are never smaller than the last
// one it handed out, so that the ids it makes sort in the order made even
// when its clock stands still or steps back. Each kernel has its own, and
// so does NewUUIDv7: a kernel whose clock runs ahead (a simulation, a
// test's fake clock) does not stamp its future on the ids of the others.
type idGen struct {
	mu   sync.Mutex
	last int64 // milliseconds << 12 | the 12 ordering bits
}

// nextTime returns the 60-bit time part of the next id made at now: the
// milliseconds, and the sub-millisecond fraction in 4096ths, raised past
// the last id's when the clock has not moved on.
func (g *idGen) nextTime(now time.Time) int64 {
	ns := now.UnixNano()
	t := ns/1e6<<12 | (ns%1e6)*4096/1e6
	g.mu.Lock()
	if t <= g.last {
		t = g.last + 1
	}
	g.last = t
	g.mu.Unlock()
	return t
}

// wallIDs makes the ids of NewUUIDv7.
var wallIDs idGen

// NewUUIDv7 returns a new UUIDv7 in its 36-character text form, stamped
// with the time now.
func NewUUIDv7() string { return wallIDs.make(time.Now()) }

// make returns a new UUIDv7 stamped with now (or, if that is not past
// the last id g made, just after that one).
func (g *idGen) make(now time.Time) string {
	t := g.nextTime(now)
	r := rand.Uint64()
	var u [16]byte
	ms, seq := uint64(t>>12), uint64(t&0xfff)
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	u[6] = 0x70 | byte(seq>>8) // version 7
	u[7] = byte(seq)
	u[8] = 0x80 | byte(r>>56)&0x3f // variant 10
	for i := 9; i < 16; i++ {
		u[i] = byte(r >> (8 * (15 - i)))
	}
	// 8-4-4-4-12 hex digits: a dash goes before bytes 4, 6, 8 and 10.
	const digits = "0123456789abcdef"
	var s [36]byte
	j := 0
	for i, b := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			s[j] = '-'
			j++
		}
		s[j], s[j+1] = digits[b>>4], digits[b&15]
		j += 2
	}
	return string(s[:])
}
