package main

import "os"

// gcFloorBytes is the heap Veena keeps allocated, untouched, under Go's
// collector (see keepGCFloor).
const gcFloorBytes = 32 << 20

// gcFloor holds that heap for the life of the process.
var gcFloor []byte

// keepGCFloor raises the heap goal of Go's collector: it allocates
// gcFloorBytes and keeps them, so that the collector counts them as live
// and lets the heap grow to twice the live heap plus them before it runs.
// The engine allocates quickly (some 13 KiB a command) while it holds
// little, and with Go's own floor of 4 MiB the collector ran about 190
// times a second under load, each time taking CPU and pausing the store's
// writer; with this floor it runs about eight times less often, and an
// auto10 load on SQLite ran some 40% faster. The pages are never written,
// so they take address space, not memory: what the floor costs is the
// garbage the heap may hold between two collections, up to gcFloorBytes.
// GOGC or GOMEMLIMIT in the environment turn it off: the operator tunes the
// collector then.
func keepGCFloor() {
	if wantGCFloor(os.Getenv) {
		gcFloor = make([]byte, gcFloorBytes)
	}
}

// wantGCFloor tells whether the environment leaves the collector to Veena.
func wantGCFloor(getenv func(string) string) bool {
	return getenv("GOGC") == "" && getenv("GOMEMLIMIT") == ""
}
