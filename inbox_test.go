package veena_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/pgtest"
	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/pgstore"
)

// waitQueued waits until the inbox command numbered seq exists.
func waitQueued(t *testing.T, st store.Store, seq int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := st.Command(context.Background(), seq)
		if err == nil {
			return
		}
		if !errors.Is(err, store.ErrNotFound) || time.Now().After(deadline) {
			t.Fatalf("command %d never queued: %v", seq, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// completedOrder returns the node tokens of a process in the order their
// NODE_TOKEN_COMPLETED events fired.
func completedOrder(t *testing.T, e *veena.Engine, process string) []string {
	t.Helper()
	evs, err := e.Events(context.Background(), process, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		if ev.Type == "NODE_TOKEN_COMPLETED" {
			out = append(out, *ev.NodeToken)
		}
	}
	return out
}

// fanTokens starts a fan process and returns it with its six waiting
// tokens, in the order the commands of a test will complete them.
func fanTokens(t *testing.T, e *veena.Engine) (*veena.Process, []string) {
	t.Helper()
	p := start(t, e, veena.StartRequest{Definition: "fan"})
	var toks []string
	for _, n := range []string{"w4", "w2", "w6", "w1", "w5", "w3"} {
		toks = append(toks, one(t, e, p.ID, n))
	}
	return p, toks
}

// TestInboxArrivalOrder: commands that find their tree busy wait in its
// inbox and are applied in the order they arrived; one that fails is
// answered with its error and holds up nothing behind it.
func TestInboxArrivalOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		st := b.place(t)()
		e := open(t, st, veena.Options{})
		defer e.Close()
		load(t, e, "fan")
		p, toks := fanTokens(t, e)

		release, err := veena.HoldTree(ctx, e, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		// The third command repeats the first: by the time it is applied
		// its token is complete.
		sends := []string{toks[0], toks[1], toks[0], toks[2], toks[3], toks[4], toks[5]}
		errs := make([]chan error, len(sends))
		for i, tok := range sends {
			errs[i] = make(chan error, 1)
			go func() {
				_, err := e.CompleteToken(ctx, tok, veena.CompleteRequest{})
				errs[i] <- err
			}()
			waitQueued(t, st, int64(i+1))
		}
		for i := range errs {
			select {
			case err := <-errs[i]:
				t.Fatalf("command %d answered while its tree was held: %v", i+1, err)
			default:
			}
		}
		release()
		for i := range errs {
			err := <-errs[i]
			if i == 2 {
				wantCode(t, err, "token_complete")
				continue
			}
			if err != nil {
				t.Fatalf("command %d (%s): %v", i+1, sends[i], err)
			}
		}
		if got := completedOrder(t, e, p.ID); !slices.Equal(got[1:7], toks) {
			t.Fatalf("tokens completed in the order %v, want start then %v", got, toks)
		}
		for i := range sends {
			c, err := st.Command(ctx, int64(i+1))
			if err != nil || !c.Done {
				t.Fatalf("command %d after the drain: %+v, %v", i+1, c, err)
			}
		}
		if got, err := e.Process(ctx, p.ID); err != nil || got.State != "completed" {
			t.Fatalf("process after every branch completed: %+v, %v", got, err)
		}
	})
}

// TestInboxOutlivesItsCaller: a queued command whose caller gives up, or
// whose engine stops, stays queued and is applied by the background work
// of the next engine; a retry with the same idempotency key then gets the
// first result and changes nothing.
func TestInboxOutlivesItsCaller(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		reopen := b.place(t)
		st := reopen()
		clk := newClock()
		e := open(t, st, veena.Options{Clock: clk.Now})
		load(t, e, "fan")
		p, toks := fanTokens(t, e)

		release, err := veena.HoldTree(ctx, e, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			_, err := e.CompleteToken(cctx, toks[0], veena.CompleteRequest{IdempotencyKey: "k1", Env: map[string]any{"by": "first"}})
			errc <- err
		}()
		waitQueued(t, st, 1)
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("caller that gave up: %v", err)
		}
		release()
		if b.durable {
			// The engine goes away with the command still queued.
			e.Close()
			st = reopen()
			e = open(t, st, veena.Options{Clock: clk.Now})
		}
		defer e.Close()
		if c, err := st.Command(ctx, 1); err != nil || c.Done {
			t.Fatalf("command of a caller that gave up: %+v, %v; want it waiting", c, err)
		}
		veena.DrainAbandoned(ctx, e)
		if c, _ := st.Command(ctx, 1); c.Done {
			t.Fatal("a command was taken as abandoned before its grace period ended")
		}
		clk.Advance(3 * time.Second)
		veena.DrainAbandoned(ctx, e)
		if c, err := st.Command(ctx, 1); err != nil || !c.Done {
			t.Fatalf("abandoned command after the background drain: %+v, %v", c, err)
		}
		tok, err := e.NodeToken(ctx, toks[0])
		if err != nil || !tok.Complete || tok.Env["by"].String() != "first" {
			t.Fatalf("token of the abandoned command: %+v, %v", tok, err)
		}

		// A retry is the same request; the same key on another body is
		// refused (the key is bound to its request).
		_, err = e.CompleteToken(ctx, toks[0], veena.CompleteRequest{IdempotencyKey: "k1", Env: map[string]any{"by": "retry"}})
		wantCode(t, err, "idempotency_key_reused")
		again, err := e.CompleteToken(ctx, toks[0], veena.CompleteRequest{IdempotencyKey: "k1", Env: map[string]any{"by": "first"}})
		if err != nil {
			t.Fatalf("retry with the same key: %v", err)
		}
		if again.ID != p.ID {
			t.Fatalf("retry answered %+v", again)
		}
		if got := completedOrder(t, e, p.ID); len(got) != 2 {
			t.Fatalf("completions after the retry: %v, want the start and one", got)
		}
		if tok, _ := e.NodeToken(ctx, toks[0]); tok.Env["by"].String() != "first" {
			t.Fatalf("the retry changed the token: %v", tok.Env)
		}

		// Finished commands are kept for an hour, then purged.
		clk.Advance(2 * time.Hour)
		veena.DrainAbandoned(ctx, e)
		if _, err := st.Command(ctx, 1); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("finished command after two hours: %v", err)
		}
	})
}

// TestIdempotencyKeysExpire: a retry with the key of an earlier command
// answers that command's result until the record is IdempotencyTTL old;
// once the background loop has purged it, the retry runs the command again
// (and its new result answers the next retries).
func TestIdempotencyKeysExpire(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clk := newClock()
		e := open(t, b.place(t)(), veena.Options{Clock: clk.Now, IdempotencyTTL: time.Hour})
		defer e.Close()
		load(t, e, "fan")
		req := veena.StartRequest{Definition: "fan", IdempotencyKey: "start-1"}
		first := start(t, e, req)

		clk.Advance(59 * time.Minute)
		veena.DrainAbandoned(ctx, e)
		if again := start(t, e, req); again.ID != first.ID {
			t.Fatalf("retry within the TTL started %s, want the first result %s", again.ID, first.ID)
		}

		clk.Advance(2 * time.Minute)
		veena.DrainAbandoned(ctx, e)
		later := start(t, e, req)
		if later.ID == first.ID {
			t.Fatalf("retry after the TTL answered the first result %s instead of running again", first.ID)
		}
		if again := start(t, e, req); again.ID != later.ID {
			t.Fatalf("retry of the command that ran again started %s, want %s", again.ID, later.ID)
		}
		page, err := e.Processes(ctx, veena.ProcessFilter{Definition: "fan"})
		if err != nil || len(page.Items) != 2 {
			t.Fatalf("processes started: %+v, %v; want 2", page, err)
		}
	})
}

// TestIdempotencyTTLSettings: records are kept a week by default, and
// forever with a negative TTL.
func TestIdempotencyTTLSettings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ttl     time.Duration
		advance time.Duration
		kept    bool
	}{
		{"default, within a week", 0, 6 * 24 * time.Hour, true},
		{"default, after a week", 0, 8 * 24 * time.Hour, false},
		{"forever", -1, 10 * 365 * 24 * time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clk := newClock()
			e := open(t, nil, veena.Options{Clock: clk.Now, IdempotencyTTL: tc.ttl})
			defer e.Close()
			load(t, e, "fan")
			req := veena.StartRequest{Definition: "fan", IdempotencyKey: "start-1"}
			first := start(t, e, req)
			clk.Advance(tc.advance)
			veena.DrainAbandoned(ctx, e)
			if kept := start(t, e, req).ID == first.ID; kept != tc.kept {
				t.Fatalf("after %v the first result answers the retry: %v, want %v", tc.advance, kept, tc.kept)
			}
		})
	}
}

// TestInboxAcrossEngines: while another transaction holds a tree in
// PostgreSQL, commands from two engines queue in its inbox instead of
// waiting on the lock, and are applied in arrival order once it is free.
func TestInboxAcrossEngines(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	var stores []*pgstore.Store
	var engines []*veena.Engine
	for range 2 {
		st, err := pgstore.Open(ctx, pgtest.URL(), pgstore.Options{Schema: schema, MaxConns: 12})
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, st)
		e := open(t, st, veena.Options{})
		defer e.Close()
		engines = append(engines, e)
	}
	load(t, engines[0], "fan")
	p, toks := fanTokens(t, engines[0])

	holder, err := stores[0].Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, `SELECT 1 FROM processes WHERE id = $1 FOR UPDATE`, p.ID); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, len(toks))
	for i, tok := range toks {
		go func() {
			_, err := engines[i%2].CompleteToken(ctx, tok, veena.CompleteRequest{})
			if err != nil {
				err = fmt.Errorf("engine %d, %s: %w", i%2, tok, err)
			}
			errs <- err
		}()
		waitQueued(t, stores[0], int64(i+1))
	}
	if err := holder.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for range toks {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := completedOrder(t, engines[1], p.ID); !slices.Equal(got[1:7], toks) {
		t.Fatalf("tokens completed in the order %v, want start then %v", got, toks)
	}
}
