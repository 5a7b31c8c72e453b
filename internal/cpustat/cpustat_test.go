package cpustat

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSelfCountsWork(t *testing.T) {
	before := Self()
	deadline := time.Now().Add(20 * time.Second)
	for Self()-before < 200*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("20s of spinning counted as %v of CPU", Self()-before)
		}
	}
	// /proc says the same of this process, to its 10ms ticks. The
	// listing holds this process alone: another process of the same name
	// (the same test running elsewhere on the machine) would add its time.
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Skip("no /proc:", err)
	}
	only := t.TempDir()
	if err := os.Symlink(fmt.Sprintf("/proc/%d", os.Getpid()), filepath.Join(only, strconv.Itoa(os.Getpid()))); err != nil {
		t.Fatal(err)
	}
	self, proc := Self(), named(only, strings.TrimSpace(string(comm)))
	if d := self - proc; d < -20*time.Millisecond || d > 20*time.Millisecond {
		t.Fatalf("getrusage says %v, /proc says %v", self, proc)
	}
}

func TestNamedSumsMatchingProcesses(t *testing.T) {
	proc := t.TempDir()
	stat := func(pid, line string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(proc, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, pid, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime …
	stat("10", "10 (postgres) S 1 10 10 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0")
	stat("11", "11 (postgres) S 10 10 10 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0")
	stat("12", "12 (postgres x) S 1 12 12 0 -1 4194560 100 0 0 0 900 900 0 0 20 0 1 0")
	stat("13", "13 (a (postgres)) S 1 13 13 0 -1 4194560 100 0 0 0 900 900 0 0 20 0 1 0")
	stat("14", "14 (postgres) S 1 14") // cut short: skipped
	stat("self", "15 (postgres) S 1 15 15 0 -1 4194560 100 0 0 0 900 900 0 0 20 0 1 0")
	if got, want := named(proc, "postgres"), 3100*time.Millisecond; got != want {
		t.Fatalf("named = %v, want %v (250+50+7+3 ticks)", got, want)
	}
	if got := named(proc, "nothing"); got != 0 {
		t.Fatalf("no process of that name: got %v", got)
	}
}
