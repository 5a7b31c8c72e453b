// Package varint reads the varint-based binary records Veena stores (the
// binary process snapshot, the compact event record): a cursor over the
// bytes whose first failure sticks, so that a decoder reads on and checks
// once.
package varint

import "encoding/binary"

// Reader reads from B. A read that finds B short or malformed sets Err to
// Malformed (if Err is not set yet) and returns a zero value; so does
// every read after a failure.
type Reader struct {
	B         []byte
	Err       error
	Malformed error
}

// Fail records a malformed record, unless a failure is recorded already.
func (r *Reader) Fail() {
	if r.Err == nil {
		r.Err = r.Malformed
	}
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.Err != nil {
		return 0
	}
	if len(r.B) == 0 {
		r.Fail()
		return 0
	}
	b := r.B[0]
	r.B = r.B[1:]
	return b
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 { return read(r, binary.Uvarint) }

// Varint reads a signed varint.
func (r *Reader) Varint() int64 { return read(r, binary.Varint) }

// read reads one value with decode, which returns it and the bytes it took
// (none or fewer: malformed).
func read[T any](r *Reader, decode func([]byte) (T, int)) T {
	var zero T
	if r.Err != nil {
		return zero
	}
	v, n := decode(r.B)
	if n <= 0 {
		r.Fail()
		return zero
	}
	r.B = r.B[n:]
	return v
}

// Count reads a number of items that take at least one byte each, failing
// if fewer bytes are left.
func (r *Reader) Count() int {
	n := r.Uvarint()
	if n > uint64(len(r.B)) {
		r.Fail()
		return 0
	}
	return int(n)
}

// Bytes reads a length (uvarint) and that many bytes; the result shares
// B's array, capped at its length.
func (r *Reader) Bytes() []byte {
	n := r.Count()
	if r.Err != nil {
		return nil
	}
	x := r.B[:n:n]
	r.B = r.B[n:]
	return x
}

// String reads what Bytes reads, as a string.
func (r *Reader) String() string { return string(r.Bytes()) }
