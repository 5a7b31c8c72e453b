// Package cpustat reads how much CPU time processes have used, for the
// benchmarks that report CPU time per command beside their rates: on a
// machine the engine shares with its database, the rate moves with
// whatever else runs, the CPU a command costs much less.
package cpustat

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Self is the user and system CPU time this process has used.
func Self() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Named is the user and system CPU time used by the running processes
// whose command name is comm (such as "postgres": a server's backends and
// its own processes), read from /proc; 0 where /proc cannot tell.
func Named(comm string) time.Duration { return named("/proc", comm) }

// ticksPerSecond is the unit of the times in /proc/PID/stat (USER_HZ,
// 100 on every Linux architecture Go supports).
const ticksPerSecond = 100

func named(proc, comm string) time.Duration {
	stats, _ := filepath.Glob(filepath.Join(proc, "[0-9]*", "stat"))
	var ticks int64
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // the process ended since the listing
		}
		// "pid (comm) state ppid …": comm may hold spaces and
		// parentheses, so it ends at the last ')'. utime and stime
		// are fields 14 and 15, the 12th and 13th after it.
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || end < open || string(b[open+1:end]) != comm {
			continue
		}
		f := bytes.Fields(b[end+1:])
		if len(f) < 13 {
			continue
		}
		u, err1 := strconv.ParseInt(string(f[11]), 10, 64)
		s, err2 := strconv.ParseInt(string(f[12]), 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		ticks += u + s
	}
	return time.Duration(ticks) * time.Second / ticksPerSecond
}
