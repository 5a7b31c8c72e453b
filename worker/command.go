package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
	"unicode"
)

// Command is a handler that runs a program for each job, the way people
// glue a workflow to scripts:
//
//   - stdin: the job's variables as a JSON object;
//   - environment: VEENA_JOB_ID, VEENA_JOB_TYPE, VEENA_PROCESS, VEENA_NODE,
//     VEENA_NODE_TOKEN, VEENA_RETRIES and each header as VEENA_HEADER_<NAME>
//     (upper case, other characters as _), besides the worker's own;
//   - exit status 0: the job completes; stdout, if not blank, is a JSON
//     object of variables to merge, in which the key "_result" (a string)
//     is the result code and "_error" ({"code", "message"}) throws a
//     business error instead;
//   - any other exit status fails the job (offered again after a back-off
//     while retries remain) with the last lines of stderr as the message;
//     a command killed at the end of the lease fails the same way;
//   - a command is stopped (the lease ran out, the worker stops, a result
//     was refused) with SIGTERM to it and every process it started, then
//     SIGKILL after a grace period (on Linux, where each command runs in a
//     process group of its own; elsewhere the command alone is killed);
//   - file descriptor 3 (named by VEENA_RESULTS_FD) takes intermediate
//     results of a Petri net activity with several outputs while the
//     command runs: one JSON object a line, "_result" its code and the
//     other keys variables, each sent at once (see Report); a line that is
//     not such an object, or a result refused, ends the command and fails
//     the job; so does a process the command started that still holds the
//     descriptor open a grace period after the command ended (it would
//     otherwise hold the job for as long as it runs).
func Command(argv []string) (Handler, error) {
	if len(argv) == 0 {
		return nil, errors.New("worker: name the command to run")
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	return func(ctx context.Context, job *Job) (Result, error) {
		in, err := json.Marshal(job.Env)
		if err != nil {
			return Result{}, NoRetry(fmt.Errorf("encode the variables: %w", err))
		}
		cctx, stop := context.WithCancel(ctx) // stop kills the command
		defer stop()
		cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
		// The end of cctx stops the command and the processes it started.
		ownGroup(cmd)
		cmd.Stdin = bytes.NewReader(in)
		var stdout, stderr bytes.Buffer
		cmd.Stdout = &limited{w: &stdout, n: 16 << 20}
		cmd.Stderr = &limited{w: &stderr, n: 1 << 20}
		cmd.Env = append(os.Environ(),
			"VEENA_JOB_ID="+job.ID, "VEENA_JOB_TYPE="+job.Type, "VEENA_PROCESS="+job.Process,
			"VEENA_NODE="+job.Node, "VEENA_NODE_TOKEN="+job.NodeToken, fmt.Sprintf("VEENA_RETRIES=%d", job.Retries))
		for k, v := range job.Headers {
			cmd.Env = append(cmd.Env, "VEENA_HEADER_"+envName(k)+"="+v)
		}
		results, err := intermediate(ctx, cmd, stop)
		if err != nil {
			return Result{}, err
		}
		err = cmd.Run()
		if rerr := results(); rerr != nil {
			return Result{}, rerr
		}
		if err != nil {
			msg := tail(stderr.String(), 5)
			if ctx.Err() != nil {
				return Result{}, fmt.Errorf("%s: stopped when its lease ran out (%v)", argv[0], ctx.Err())
			}
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				if msg == "" {
					msg = fmt.Sprintf("%s exited with status %d", argv[0], ee.ExitCode())
				} else {
					msg = fmt.Sprintf("%s exited with status %d: %s", argv[0], ee.ExitCode(), msg)
				}
				return Result{}, errors.New(msg)
			}
			return Result{}, fmt.Errorf("run %s: %w", argv[0], err)
		}
		return parseOutput(stdout.Bytes())
	}, nil
}

// intermediate gives cmd a pipe on file descriptor 3 whose lines are
// intermediate results, sent with Report as they come (a failure stops
// the command). Call the function it returns after the command ended: it
// reports the first line that could not be sent.
func intermediate(ctx context.Context, cmd *exec.Cmd, stop func()) (func() error, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("worker: results pipe: %w", err)
	}
	cmd.ExtraFiles = []*os.File{w}
	cmd.Env = append(cmd.Env, "VEENA_RESULTS_FD=3")
	done := make(chan error, 1)
	go func() {
		defer r.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		var first error
		for sc.Scan() {
			if first != nil || len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue // drain, so the command is not blocked writing
			}
			res, err := parseOutput(sc.Bytes())
			if err == nil {
				err = Report(ctx, res)
			}
			if err != nil {
				first = NoRetry(fmt.Errorf("intermediate result %.200q: %w", sc.Text(), err))
				stop()
			}
		}
		if err := sc.Err(); err != nil && first == nil {
			first = NoRetry(fmt.Errorf("intermediate results: %w", err))
			stop()
		}
		done <- first
	}()
	return func() error {
		_ = w.Close() // with the command's end, the reader sees the end
		// unless a process the command started still holds the pipe: wait
		// for it as long as Wait waits for the command's output, no longer.
		t := time.NewTimer(cmd.WaitDelay)
		defer t.Stop()
		select {
		case err := <-done:
			return err
		case <-t.C:
			_ = r.Close() // the reader stops
			<-done
			return fmt.Errorf("%s ended, but a process it started still held its results pipe (file descriptor 3) open %v later", cmd.Path, cmd.WaitDelay)
		}
	}, nil
}

// parseOutput reads a command's stdout: blank, or a JSON object of
// variables with the reserved keys _result and _error.
func parseOutput(out []byte) (Result, error) {
	if len(bytes.TrimSpace(out)) == 0 {
		return Result{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return Result{}, NoRetry(fmt.Errorf("the command's output is not a JSON object: %.200s", strings.TrimSpace(string(out))))
	}
	var res Result
	if r, ok := m["_result"]; ok {
		s, isStr := r.(string)
		if !isStr {
			return Result{}, NoRetry(errors.New(`the command's "_result" is not a string`))
		}
		res.Result = s
		delete(m, "_result")
	}
	if e, ok := m["_error"]; ok {
		obj, isObj := e.(map[string]any)
		code, _ := obj["code"].(string)
		if !isObj || code == "" {
			return Result{}, NoRetry(errors.New(`the command's "_error" needs a "code"`))
		}
		message, _ := obj["message"].(string)
		delete(m, "_error")
		return Result{}, &BusinessError{Code: code, Message: message, Env: m}
	}
	if len(m) > 0 {
		res.Env = m
	}
	return res, nil
}

// envName turns a header name into an environment variable's.
func envName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(unicode.ToUpper(r))
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// tail returns the last n non-blank lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// limited keeps at most n bytes and drops the rest.
type limited struct {
	w *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.w.Len(); room > 0 {
		if len(p) > room {
			l.w.Write(p[:room])
		} else {
			l.w.Write(p)
		}
	}
	return len(p), nil
}
