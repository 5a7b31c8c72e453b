package kernel

import "testing"

// TestEventTypeNames: every event type has its bit number as index and a
// name that parses back to it; a value that is not one type has neither.
func TestEventTypeNames(t *testing.T) {
	seen := map[string]bool{}
	for i, typ := range EventTypes {
		if typ != 1<<i {
			t.Fatalf("EventTypes[%d] = %#x, want bit %d", i, uint64(typ), i)
		}
		if got := typ.Index(); got != i {
			t.Errorf("%#x: Index %d, want %d", uint64(typ), got, i)
		}
		name := typ.String()
		if name == "" || seen[name] {
			t.Errorf("%#x: name %q empty or repeated", uint64(typ), name)
		}
		seen[name] = true
		if back, ok := ParseEventType(name); !ok || back != typ {
			t.Errorf("ParseEventType(%q) = %#x, %v", name, uint64(back), ok)
		}
	}
	for _, typ := range []EventType{0, ProcessCreated | ProcessStarted, 1 << len(EventTypes), 1 << 63} {
		if typ.Index() != -1 || typ.String() != "" {
			t.Errorf("%#x: Index %d, String %q; want -1 and \"\"", uint64(typ), typ.Index(), typ.String())
		}
	}
	if _, ok := ParseEventType("NO_SUCH_EVENT"); ok {
		t.Error("an unknown name parsed")
	}
}
