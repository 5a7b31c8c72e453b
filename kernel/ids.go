package kernel

import (
	"encoding/hex"
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

// idClock hands out the time part of ids: never smaller than the last one
// handed out, so that the ids one kernel makes sort in the order made.
var idClock struct {
	sync.Mutex
	last int64 // milliseconds << 12 | the 12 ordering bits
}

// nextIDTime returns the 60-bit time part of the next id made at now:
// the milliseconds, and the sub-millisecond fraction in 4096ths, raised
// past the last id's when the clock has not moved on.
func nextIDTime(now time.Time) int64 {
	ns := now.UnixNano()
	t := ns/1e6<<12 | (ns%1e6)*4096/1e6
	idClock.Lock()
	if t <= idClock.last {
		t = idClock.last + 1
	}
	idClock.last = t
	idClock.Unlock()
	return t
}

// NewUUIDv7 returns a new UUIDv7 in its 36-character text form.
func NewUUIDv7() string {
	t := nextIDTime(time.Now())
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
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return string(s[:])
}
