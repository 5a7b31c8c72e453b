package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// heapGoal is the collector's heap goal after a collection.
func heapGoal() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestGCFloor: with GOGC and GOMEMLIMIT unset, the floor raises the heap
// goal by at least its size; either variable turns it off.
func TestGCFloor(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, true},
		{map[string]string{"GOGC": "200"}, false},
		{map[string]string{"GOGC": "off"}, false},
		{map[string]string{"GOMEMLIMIT": "512MiB"}, false},
	} {
		if got := wantGCFloor(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("environment %v: floor %v, want %v", tc.env, got, tc.want)
		}
	}

	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	kept := gcFloor
	defer func() { gcFloor = kept }()
	gcFloor = nil
	before := heapGoal()
	keepGCFloor()
	if len(gcFloor) != gcFloorBytes {
		t.Fatalf("floor of %d bytes, want %d", len(gcFloor), gcFloorBytes)
	}
	if after := heapGoal(); after < before+gcFloorBytes {
		t.Errorf("heap goal %d MiB with the floor, %d MiB without: not raised by %d MiB", after>>20, before>>20, gcFloorBytes>>20)
	}
	runtime.KeepAlive(gcFloor)
}
