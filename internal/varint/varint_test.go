package varint

import (
	"encoding/binary"
	"errors"
	"testing"
)

var errBad = errors.New("bad record")

func TestReader(t *testing.T) {
	var b []byte
	b = binary.AppendUvarint(b, 300)
	b = binary.AppendVarint(b, -5)
	b = binary.AppendUvarint(b, 3)
	b = append(b, "abc"...)
	b = binary.AppendUvarint(b, 0)
	b = append(b, 0xa5)
	r := Reader{B: b, Malformed: errBad}
	if got := r.Uvarint(); got != 300 {
		t.Errorf("Uvarint = %d, want 300", got)
	}
	if got := r.Varint(); got != -5 {
		t.Errorf("Varint = %d, want -5", got)
	}
	x := r.Bytes()
	if string(x) != "abc" || cap(x) != 3 {
		t.Errorf("Bytes = %q (cap %d), want \"abc\" (cap 3)", x, cap(x))
	}
	if got := r.String(); got != "" {
		t.Errorf("String = %q, want empty", got)
	}
	if got := r.Byte(); got != 0xa5 {
		t.Errorf("Byte = %#x, want 0xa5", got)
	}
	if r.Err != nil || len(r.B) != 0 {
		t.Fatalf("after a whole record: err %v, %d bytes left", r.Err, len(r.B))
	}
	// Reading past the end fails, and the failure sticks.
	if got := r.Byte(); got != 0 || !errors.Is(r.Err, errBad) {
		t.Fatalf("past the end: %d, %v", got, r.Err)
	}
	r.B = binary.AppendUvarint(nil, 7)
	if got := r.Uvarint(); got != 0 {
		t.Errorf("a read after a failure returned %d", got)
	}
}

func TestReaderShort(t *testing.T) {
	cases := map[string][]byte{
		"length beyond the bytes": append(binary.AppendUvarint(nil, 5), "abc"...),
		"cut varint":              {0x80},
		"empty":                   nil,
	}
	for name, b := range cases {
		r := Reader{B: b, Malformed: errBad}
		if x := r.Bytes(); x != nil || !errors.Is(r.Err, errBad) {
			t.Errorf("%s: Bytes = %q, err %v", name, x, r.Err)
		}
	}
	// Fail keeps the first failure.
	first := errors.New("first")
	r := Reader{Err: first, Malformed: errBad}
	r.Fail()
	if r.Err != first {
		t.Errorf("Fail replaced %v with %v", first, r.Err)
	}
}

// FuzzReader: no input makes a reader panic or read past its bytes.
func FuzzReader(f *testing.F) {
	f.Add([]byte{0x03, 'a', 'b', 'c', 0x7f})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := Reader{B: b, Malformed: errBad}
		for i := 0; r.Err == nil && i < 64; i++ {
			switch i % 5 {
			case 4:
				r.Byte()
			case 0:
				r.Uvarint()
			case 1:
				r.Varint()
			case 2:
				r.Count()
			case 3:
				if x := r.Bytes(); len(x) > len(b) {
					t.Fatalf("read %d bytes of %d", len(x), len(b))
				}
			}
		}
	})
}
