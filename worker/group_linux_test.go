//go:build linux

package worker_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/veena-wf/veena/worker"
)

// runUntilChild runs script as a job's command (its first argument the
// file to write the pid of the child it starts into) until the child has
// started, then ends the job's context with end; it returns the child's
// pid and the handler's error.
func runUntilChild(t *testing.T, script string, ctx context.Context, end func()) (int, error) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	h, err := worker.Command([]string{"sh", "-c", script, "sh", pidFile})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := h(ctx, &worker.Job{ID: "p.j1", Type: "t"})
		errc <- err
	}()
	var pid int
	deadline := time.Now().Add(20 * time.Second)
	for pid == 0 {
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not start its child")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Whatever the test finds, the child does not outlive it.
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	end()
	select {
	case err = <-errc:
	case <-time.After(30 * time.Second):
		t.Fatal("the handler did not return after its context ended")
	}
	return pid, err
}

// gone reports whether process pid has ended (it may linger as a zombie
// until whoever adopted it reaps it).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) state …: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

func waitGone(t *testing.T, pid int, within time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the command's child %d still runs %s after", what, pid, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCommandStopsItsChildren: a job's command that is stopped (its job
// canceled, the worker stopping) takes the processes it started with it:
// SIGTERM reaches the command's whole process group.
func TestCommandStopsItsChildren(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pid, err := runUntilChild(t, `sleep 300 & echo $! > "$1"; wait`, ctx, cancel)
	if err == nil {
		t.Error("the stopped command's job did not fail")
	}
	waitGone(t, pid, 5*time.Second, "after cancel")
}

// TestCommandKillsStubbornChildren: at the end of a job's lease, a child
// that ignores SIGTERM, started in the background by a command that
// ignores it too, is killed with SIGKILL after the grace period.
func TestCommandKillsStubbornChildren(t *testing.T) {
	defer worker.SetKillGrace(300 * time.Millisecond)()
	lease, end := context.WithTimeout(context.Background(), 3*time.Second)
	defer end()
	pid, err := runUntilChild(t, `trap '' TERM; sleep 300 </dev/null >/dev/null 2>&1 & echo $! > "$1"; sleep 300`, lease, func() {})
	if err == nil || !strings.Contains(err.Error(), "lease ran out") {
		t.Errorf("the job's error = %v, want its lease to have run out", err)
	}
	waitGone(t, pid, 5*time.Second, "after the grace period")
}

// TestCommandEndsDespiteChildHoldingResults: a command that ends while a
// process it started in the background still holds its results pipe (file
// descriptor 3) open does not hold its job for as long as that process
// runs: the job fails, naming the pipe, once the grace period is over.
func TestCommandEndsDespiteChildHoldingResults(t *testing.T) {
	defer worker.SetKillGrace(200 * time.Millisecond)()
	began := time.Now()
	_, err := runUntilChild(t, `sleep 300 </dev/null >/dev/null 2>&1 & echo $! > "$1"; echo '{}'`, context.Background(), func() {})
	if err == nil || !strings.Contains(err.Error(), "results pipe") {
		t.Errorf("the job's error = %v, want the results pipe named", err)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("the job ended %v after it began, want about the grace period", took)
	}
}
