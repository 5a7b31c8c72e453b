//go:build linux

package worker

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// killGrace is how long a command's process group has, after SIGTERM,
// before SIGKILL.
var killGrace = 5 * time.Second

// ownGroup runs cmd in a process group of its own, and has its context's
// end stop the whole group, not just the command: SIGTERM to the group at
// once, SIGKILL to it after killGrace. A shell script's children (a
// pipeline, a program it started in the background) would otherwise go on
// running after their command was stopped.
//
// The group is named by the command's process id, which stays reserved
// while any process of the group lives; the SIGKILL after the grace period
// goes to the group even if the command itself ended at SIGTERM, so that a
// child that ignores SIGTERM ends too. (Only if every process of the group
// ended and the system handed the same number to a new group leader within
// the grace period would the SIGKILL reach another group.)
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		pgid := cmd.Process.Pid
		err := syscall.Kill(-pgid, syscall.SIGTERM)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		time.AfterFunc(killGrace, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		return err
	}
	// Past the grace period, Wait stops waiting for output that a process
	// outside the group (one that made its own session) may hold open.
	cmd.WaitDelay = killGrace + time.Second
}
