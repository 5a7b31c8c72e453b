package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/veena-wf/veena"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// client talks to a Veena server.
type client struct {
	base  *url.URL
	token string
	http  *http.Client
	// file names a definition file whose problems an error lists.
	file string
}

// clientFlags are the flags every client command has.
type clientFlags struct {
	url, token string
}

// add adds --url and --token to cmd and its subcommands.
func (f *clientFlags) add(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&f.url, "url", env("VEENA_URL", "http://"+DefaultAddr), "the Veena server (env VEENA_URL)")
	// The default is read when the command runs, so that --help never
	// shows a secret.
	cmd.PersistentFlags().StringVar(&f.token, "token", "", "access token (env VEENA_TOKEN)")
}

// client returns a client of the server the flags (or VEENA_URL and
// VEENA_TOKEN) name.
func (f *clientFlags) client() (*client, error) {
	raw := f.url
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("veena: --url %q is not an http(s) URL of a Veena server", f.url)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	token := f.token
	if token == "" {
		token = env("VEENA_TOKEN", "")
	}
	return &client{base: u, token: token, http: &http.Client{Timeout: 0}}, nil
}

// apiError is an error answer of the server.
type apiError struct {
	Status int           `json:"status"`
	Code   string        `json:"code"`
	Title  string        `json:"title"`
	Detail string        `json:"detail"`
	Errors []lineProblem `json:"errors"`
	// file names the definition file the errors are about.
	file string
}

// lineProblem is one problem of a definition that failed to load.
type lineProblem struct {
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
}

// Error returns the message describe gives.
func (e *apiError) Error() string { return e.describe() }

// describe says what went wrong the way a person wants to read it: what the
// server refused and why, the problems of a definition file as
// file:line:column lines, and what to do about credentials.
func (e *apiError) describe() string {
	var b strings.Builder
	switch {
	case e.Code == "definition_invalid" && len(e.Errors) > 0:
		name := e.file
		if name == "" {
			name = "definition"
		}
		fmt.Fprintf(&b, "veena: %s is not a valid definition:", name)
		for _, p := range e.Errors {
			if p.Line > 0 {
				fmt.Fprintf(&b, "\n  %s:%d:%d: %s", name, p.Line, p.Column, p.Message)
			} else {
				fmt.Fprintf(&b, "\n  %s: %s", name, p.Message)
			}
		}
		return b.String()
	case e.Status == http.StatusUnauthorized:
		fmt.Fprintf(&b, "veena: the server needs a valid access token: %s\n  pass --token or set VEENA_TOKEN (an admin makes one with `veena access-token create`)", e.Detail)
		return b.String()
	case e.Status == http.StatusForbidden:
		return "veena: not allowed: " + e.Detail
	}
	msg := e.Detail
	if msg == "" {
		msg = e.Title
	}
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	b.WriteString("veena: " + msg)
	if e.Code != "" {
		b.WriteString(" (" + e.Code + ")")
	}
	return b.String()
}

// request sends a request and decodes a JSON answer into out (unless nil).
// It returns the status code.
func (c *client) request(ctx context.Context, method, path string, q url.Values, body io.Reader, ctype string, hdr http.Header, out any) (int, error) {
	resp, err := c.send(ctx, method, path, q, body, ctype, hdr)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	if w, ok := out.(io.Writer); ok {
		_, err := io.Copy(w, resp.Body)
		return resp.StatusCode, err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return resp.StatusCode, fmt.Errorf("veena: the server's answer to %s %s could not be read: %w", method, path, err)
	}
	return resp.StatusCode, nil
}

// send sends a request; an answer that is not 2xx becomes an *apiError.
func (c *client) send(ctx context.Context, method, path string, q url.Values, body io.Reader, ctype string, hdr http.Header) (*http.Response, error) {
	u := *c.base
	u.Path = c.base.Path + path
	u.RawPath = ""
	if q != nil {
		u.RawQuery = q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, c.unreachable(err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		ae := &apiError{Status: resp.StatusCode, file: c.file}
		if err := json.Unmarshal(b, ae); err != nil || ae.Code == "" && ae.Title == "" {
			ae.Title = http.StatusText(resp.StatusCode)
			ae.Detail = strings.TrimSpace(string(b))
			if len(ae.Detail) > 300 {
				ae.Detail = ae.Detail[:300] + "…"
			}
			if !strings.Contains(resp.Header.Get("Content-Type"), "json") && resp.StatusCode == http.StatusNotFound {
				ae.Detail = "is " + c.base.String() + " a Veena server?"
			}
		}
		ae.Status = resp.StatusCode
		return nil, ae
	}
	return resp, nil
}

// unreachable explains a request that did not reach the server.
func (c *client) unreachable(err error) error {
	hint := ""
	if errors.Is(err, syscall.ECONNREFUSED) {
		hint = "; is `veena serve` running? (set --url or VEENA_URL to use another server)"
	} else {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			hint = " (timed out)"
		}
	}
	return fmt.Errorf("veena: cannot reach the Veena server at %s: %v%s", c.base, rootCause(err), hint)
}

// rootCause strips the method and URL an *url.Error repeats.
func rootCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// getJSON GETs path and decodes the JSON answer into out.
func (c *client) getJSON(ctx context.Context, path string, q url.Values, out any) error {
	_, err := c.request(ctx, http.MethodGet, path, q, nil, "", nil, out)
	return err
}

// command posts a process command (start, complete, cancel, backtrack)
// with an optional idempotency key and returns the process it answers with.
func (c *client) command(ctx context.Context, path string, body any, idem string) (*veena.Process, error) {
	var p veena.Process
	if _, err := c.postJSON(ctx, path, body, &p, idem); err != nil {
		return nil, err
	}
	return &p, nil
}

// postJSON POSTs in as JSON, with an Idempotency-Key when idem is not
// empty, and decodes the answer into out; it returns the status code.
func (c *client) postJSON(ctx context.Context, path string, in, out any, idem string) (int, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return 0, err
	}
	hdr := http.Header{}
	if idem != "" {
		hdr.Set("Idempotency-Key", idem)
	}
	return c.request(ctx, http.MethodPost, path, nil, bytes.NewReader(b), "application/json", hdr, out)
}

// sseEvent is one server-sent event.
type sseEvent struct {
	id   string
	name string
	data string
}

// stream reads a server-sent event stream, calling fn for each event until
// fn returns false, the stream ends or ctx is done. It reconnects with
// Last-Event-ID when the connection drops.
func (c *client) stream(ctx context.Context, path string, after int64, fn func(sseEvent) bool) error {
	last := strconv.FormatInt(after, 10)
	backoff := 500 * time.Millisecond
	for {
		hdr := http.Header{"Accept": {"text/event-stream"}}
		if last != "" && last != "0" {
			hdr.Set("Last-Event-ID", last)
		}
		resp, err := c.send(ctx, http.MethodGet, path, nil, nil, "", hdr)
		if err != nil {
			var ae *apiError
			if errors.As(err, &ae) || ctx.Err() != nil {
				return err
			}
		} else {
			backoff = 500 * time.Millisecond
			// A stream that breaks off is reconnected below, from the
			// last event seen.
			done, _ := readSSE(resp.Body, func(ev sseEvent) bool {
				if ev.id != "" {
					last = ev.id
				}
				return fn(ev)
			})
			resp.Body.Close()
			if done {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		if backoff < 10*time.Second {
			backoff *= 2
		}
	}
}

// readSSE parses an event stream; done is true when fn asked to stop.
func readSSE(r io.Reader, fn func(sseEvent) bool) (done bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var ev sseEvent
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if len(data) > 0 {
				ev.data = strings.Join(data, "\n")
				if !fn(ev) {
					return true, nil
				}
			}
			ev, data = sseEvent{}, nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.id = value
		case "event":
			ev.name = value
		case "data":
			data = append(data, value)
		}
	}
	return false, sc.Err()
}
