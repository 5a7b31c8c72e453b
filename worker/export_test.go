package worker

import "time"

// SetKillGrace sets the grace period between SIGTERM and SIGKILL for the
// length of a test.
func SetKillGrace(d time.Duration) (restore func()) {
	old := killGrace
	killGrace = d
	return func() { killGrace = old }
}
