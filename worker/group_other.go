//go:build !linux

package worker

import (
	"os/exec"
	"time"
)

// ownGroup only has a killed command's output waited for a moment: on
// this system the command alone is killed, not the processes it started.
func ownGroup(cmd *exec.Cmd) {
	cmd.WaitDelay = time.Second
}
