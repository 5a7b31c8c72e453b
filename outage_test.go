package veena_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/pgtest"
	"github.com/veena-wf/veena/store/pgstore"
	"github.com/veena-wf/veena/store/sqlitestore"
)

// TestDatabaseFull fills a size-capped SQLite database: the command that
// does not fit fails with store_unavailable and the driver's reason, and
// the database holds exactly the commands acknowledged before it.
func TestDatabaseFull(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "veena.db")
	st, err := sqlitestore.Open(path, sqlitestore.Options{MaxPageCount: 80})
	if err != nil {
		t.Fatal(err)
	}
	e := open(t, st, veena.Options{})
	load(t, e, "wait")
	big := strings.Repeat("x", 2000)
	var acked []string
	for {
		p, err := e.StartProcess(ctx, veena.StartRequest{Definition: "wait", Env: map[string]any{"big": big}})
		if err != nil {
			wantCode(t, err, "store_unavailable")
			if !strings.Contains(err.Error(), "full") {
				t.Fatalf("the error does not say the database is full: %v", err)
			}
			break
		}
		acked = append(acked, p.ID)
		if len(acked) > 1000 {
			t.Fatal("the database never filled up")
		}
	}
	e.Close()

	st, err = sqlitestore.Open(path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e = open(t, st, veena.Options{})
	defer e.Close()
	page, err := e.Processes(ctx, veena.ProcessFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != len(acked) {
		t.Fatalf("%d processes stored, %d acknowledged", len(page.Items), len(acked))
	}
	for _, id := range acked {
		complete(t, e, one(t, e, id, "task"), veena.CompleteRequest{})
	}
}

// proxy forwards TCP connections to a server until it is cut.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
}

func newProxy(t *testing.T, addr, target string) *proxy {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
	return p
}

func (p *proxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestDatabaseUnreachable cuts the network to PostgreSQL: commands fail
// with store_unavailable and change nothing; when it is back, the engine
// carries on.
func TestDatabaseUnreachable(t *testing.T) {
	ctx := context.Background()
	u, err := url.Parse(pgtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	px := newProxy(t, "127.0.0.1:0", u.Host)
	addr := px.ln.Addr().String()
	viaProxy := *u
	viaProxy.Host = addr
	q := viaProxy.Query()
	q.Set("connect_timeout", "2")
	viaProxy.RawQuery = q.Encode()
	st, err := pgstore.Open(ctx, viaProxy.String(), pgstore.Options{Schema: pgtest.Schema(t)})
	if err != nil {
		t.Fatal(err)
	}
	e := open(t, st, veena.Options{})
	defer e.Close()
	load(t, e, "wait")
	p := start(t, e, veena.StartRequest{Definition: "wait"})
	task := one(t, e, p.ID, "task")

	px.cut()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = e.CompleteToken(cctx, task, veena.CompleteRequest{})
	if err == nil {
		t.Fatal("a command succeeded with the database unreachable")
	}
	if veena.Code(err) != "store_unavailable" && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want store_unavailable, have %s: %v", veena.Code(err), err)
	}
	if err := e.Ready(cctx); veena.Code(err) != "store_unavailable" {
		t.Fatalf("Ready with the database unreachable: %v", err)
	}

	px = newProxy(t, addr, u.Host)
	defer px.cut()
	var got *veena.Process
	waitFor(t, func() bool {
		got, err = e.CompleteToken(ctx, task, veena.CompleteRequest{})
		return err == nil
	})
	if got.State != "completed" {
		t.Fatalf("after the outage: %s", got.State)
	}
	evs, _ := e.Events(ctx, p.ID, 0, 0)
	completed := 0
	for _, ev := range evs {
		if ev.Type == "PROCESS_COMPLETED" {
			completed++
		}
	}
	if completed != 1 {
		t.Fatalf("%d PROCESS_COMPLETED events", completed)
	}
}

// TestSchemaRefusals: an engine refuses a database newer than itself, and
// with NoMigrate one that is behind.
func TestSchemaRefusals(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	st, err := pgstore.Open(ctx, pgtest.URL(), pgstore.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	_, err = veena.Open(ctx, veena.Options{Store: st, NoMigrate: true})
	if err == nil || !strings.Contains(err.Error(), "behind") {
		t.Fatalf("NoMigrate on an empty database: %v", err)
	}
	e := open(t, st, veena.Options{})
	if _, err := st.Pool().Exec(ctx, "UPDATE schema_version SET version = version + 1"); err != nil {
		t.Fatal(err)
	}
	if err := e.Ready(ctx); err == nil {
		t.Fatal("Ready with a newer schema")
	}
	e.Close()
	st, err = pgstore.Open(ctx, pgtest.URL(), pgstore.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = veena.Open(ctx, veena.Options{Store: st})
	if err == nil || !strings.Contains(err.Error(), "is newer than this Veena (") || !strings.Contains(err.Error(), "); upgrade Veena") {
		t.Fatalf("opening a newer database: %v", err)
	}
}

// TestTimersFireOnceAcrossEngines: two engines on one PostgreSQL database
// share the due delayed tokens, and each fires exactly once.
func TestTimersFireOnceAcrossEngines(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	clk := newClock()
	var engines []*veena.Engine
	for range 2 {
		st, err := pgstore.Open(ctx, pgtest.URL(), pgstore.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		e := open(t, st, veena.Options{Clock: clk.Now, TimerInterval: 5 * time.Millisecond})
		defer e.Close()
		engines = append(engines, e)
	}
	load(t, engines[0], "delay")
	var ids []string
	for i := range 30 {
		p := start(t, engines[i%2], veena.StartRequest{Definition: "delay", Env: map[string]any{"ready": false}})
		if _, err := engines[i%2].PatchProcessEnv(ctx, p.ID, map[string]any{"ready": true}, ""); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	for _, e := range engines {
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(2 * time.Minute)
	for _, id := range ids {
		waitFor(t, func() bool { return len(active(t, engines[0], id, "end")) == 1 })
	}
	for _, e := range engines {
		e.Stop()
	}
	for _, id := range ids {
		accepted := 0
		for _, ev := range mustEvents(t, engines[1], id) {
			if ev.Type == "NODE_TOKEN_ACCEPTED" {
				accepted++
			}
		}
		if accepted != 3 { // start, hold (once), end
			t.Fatalf("process %s: %d NODE_TOKEN_ACCEPTED events, want 3", id, accepted)
		}
	}
}

// TestEnginesShareProcesses: two engines on one database take turns on the
// same processes; each sees the other's changes (its cached trees are
// checked against the stored version) and concurrent commands from both
// are applied one after another.
func TestEnginesShareProcesses(t *testing.T) {
	for _, b := range backends() {
		if !b.durable {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			place := b.place(t)
			e1 := open(t, place(), veena.Options{})
			defer e1.Close()
			e2 := open(t, place(), veena.Options{})
			defer e2.Close()
			load(t, e1, "tokenset")
			p := start(t, e2, veena.StartRequest{Definition: "tokenset"}) // e2 learns the definition from the store
			complete(t, e1, one(t, e1, p.ID, "start"), veena.CompleteRequest{Arcs: []*string{strp("fan")},
				TokenSet: &veena.TokenSetRequest{Name: "set", Count: 20}})
			work := active(t, e2, p.ID, "work")
			if len(work) != 20 {
				t.Fatalf("%d work tokens", len(work))
			}
			var wg sync.WaitGroup
			for i, id := range work {
				wg.Add(1)
				go func() {
					defer wg.Done()
					e := e1
					if i%2 == 1 {
						e = e2
					}
					if _, err := e.CompleteToken(ctx, id, veena.CompleteRequest{}); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			done := one(t, e1, p.ID, "done")
			got := complete(t, e2, done, veena.CompleteRequest{})
			if got.State != "completed" {
				t.Fatalf("process %s", got.State)
			}
			if _, err := e1.CompleteToken(ctx, done, veena.CompleteRequest{}); veena.Code(err) != "process_not_executing" {
				t.Fatalf("e1 completing again: %v", err)
			}
		})
	}
}
