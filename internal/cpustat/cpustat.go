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

// Of is the user and system CPU time each of the running processes pids
// has used (0 for one /proc cannot tell), read from /proc.
func Of(pids []int) map[int]time.Duration {
	out := make(map[int]time.Duration, len(pids))
	for _, pid := range pids {
		out[pid] = stat(filepath.Join("/proc", strconv.Itoa(pid), "stat"), "")
	}
	return out
}

func named(proc, comm string) time.Duration {
	stats, _ := filepath.Glob(filepath.Join(proc, "[0-9]*", "stat"))
	var total time.Duration
	for _, path := range stats {
		total += stat(path, comm)
	}
	return total
}

// stat reads the CPU time in a /proc/PID/stat file, if its command name
// is comm (any if comm is empty).
func stat(path, comm string) time.Duration {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0 // the process ended since the listing
	}
	// "pid (comm) state ppid …": comm may hold spaces and parentheses, so
	// it ends at the last ')'. utime and stime are fields 14 and 15, the
	// 12th and 13th after it.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open || (comm != "" && string(b[open+1:end]) != comm) {
		return 0
	}
	f := bytes.Fields(b[end+1:])
	if len(f) < 13 {
		return 0
	}
	u, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	s, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(u+s) * time.Second / ticksPerSecond
}
