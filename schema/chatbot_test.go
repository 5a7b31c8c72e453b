package schema_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/server"
	"github.com/veena-wf/veena/store/sqlitestore"
)

// conversation is one simulated user: the unparsable messages they send
// first, and the statuses their order's look-ups return.
type conversation struct {
	user     string
	garbage  int
	order    string
	statuses []string
}

// expect is what a conversation implies for the instance's almanac and
// state, following the schema by hand.
func (c conversation) expect() (alm map[string]any, state string) {
	attempts, checks := int64(0), int64(0)
	orderNo, status := "", ""
	for range c.garbage {
		if attempts < 2 {
			attempts++
		} else {
			return map[string]any{"attempts": attempts, "checks": checks, "orderNo": orderNo, "status": status}, "completed"
		}
	}
	orderNo = c.order
	for {
		checks++
		status = c.statuses[min(int(checks)-1, len(c.statuses)-1)]
		if status == "delivered" || checks >= 4 {
			break
		}
	}
	return map[string]any{"attempts": attempts, "checks": checks, "orderNo": orderNo, "status": status}, "completed"
}

func conversations(n int) []conversation {
	out := make([]conversation, n)
	for i := range out {
		c := conversation{user: fmt.Sprintf("user%04d", i), garbage: i % 4, order: fmt.Sprintf("X-%04d", i)}
		switch i % 3 {
		case 0:
			c.statuses = []string{"delivered"}
		case 1:
			c.statuses = []string{"packed", "in transit", "delivered"}
		default:
			c.statuses = []string{"delayed"}
		}
		out[i] = c
	}
	return out
}

// TestChatBotThousandUsers: 1,000 simulated users talk to the chat-bot at
// once through POST /api/v1/events on an SQLite file. Each conversation
// reaches its own instance (created by the trigger), child look-ups update
// their parents, the timers are advanced on a test clock, and afterwards
// every instance's almanac is exactly what its conversation implies.
// VEENA_SCHEMA_USERS changes the number of users.
func TestChatBotThousandUsers(t *testing.T) {
	n := envInt("VEENA_SCHEMA_USERS", 1000)
	if testing.Short() {
		n = min(n, 200)
	}
	b := newBot()
	convs := conversations(n)
	for _, c := range convs {
		b.statuses[c.order] = c.statuses
	}
	// Every third order's first look-up fails once: the declared retry
	// (3 times, every 10 s) brings it through.
	for i, c := range convs {
		if i%5 == 0 {
			b.fail[c.order] = 1
		}
	}
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "veena.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := open(t, st, b, botFile)
	srv := httptest.NewServer(server.New(server.Config{Engine: h.e, Schemas: h.rt, Loopback: true}))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

	post := func(user, text string) (string, int, error) {
		body := fmt.Sprintf(`{"name": "chat.message", "context": {"channel": "web", "userId": %q}, "payload": {"text": %q}}`, user, text)
		res, err := client.Post(srv.URL+"/api/v1/events", "application/json", strings.NewReader(body))
		if err != nil {
			return "", 0, err
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		id := ""
		if i := strings.Index(string(raw), `"id":"`); i >= 0 {
			id = string(raw[i+6:])
			id = id[:strings.IndexByte(id, '"')]
		}
		if res.StatusCode >= 300 {
			return id, res.StatusCode, fmt.Errorf("%s: %d %s", text, res.StatusCode, raw)
		}
		return id, res.StatusCode, nil
	}

	ids := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 64)
	start := time.Now()
	for i, c := range convs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			id, code, err := post(c.user, "/order")
			if err != nil {
				errs <- err
				return
			}
			if code != 201 {
				errs <- fmt.Errorf("%s: /order answered %d, not 201", c.user, code)
				return
			}
			ids[i] = id
			for g := range c.garbage {
				got, _, err := post(c.user, "no idea "+strconv.Itoa(g))
				if err != nil {
					errs <- err
					return
				}
				if got != id {
					errs <- fmt.Errorf("%s: message went to %s, not %s", c.user, got, id)
					return
				}
			}
			if c.garbage < 3 {
				if got, _, err := post(c.user, "my order is "+c.order); err != nil || got != id {
					errs <- fmt.Errorf("%s: order message: %v (to %s, not %s)", c.user, err, got, id)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d users, %d conversations started and talked to in %v", n, n, time.Since(start).Round(time.Millisecond))

	// Let the actions run, then move the clock over the retries and the
	// timers, once per possible check.
	settleAll := func() {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		pending := append([]string(nil), ids...)
		for len(pending) > 0 {
			var still []string
			for _, id := range pending {
				in, err := h.rt.Nodes(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				busy := false
				for _, nd := range in.Nodes {
					for _, a := range nd.Actions {
						started := a.State == "pending" && nd.State == "running" // the next step starts it
						if started || a.State == "running" || (a.State == "retrying" && !a.Due.After(h.clock.Now())) {
							busy = true
						}
					}
				}
				if busy {
					still = append(still, id)
				}
			}
			pending = still
			// A look-up child's answer waits in its parent's inbox until
			// it is applied: the parent is busy until then.
			if n, err := h.e.WaitingCommands(context.Background()); err != nil {
				t.Fatal(err)
			} else if n > 0 && len(pending) == 0 {
				pending = append(pending, ids...)
			}
			if len(pending) > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("%d instances do not settle", len(pending))
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	settleAll()
	for range 5 {
		h.clock.Add(11 * time.Second) // retries
		waitTimers(t, h)
		settleAll()
		h.clock.Add(15 * time.Minute) // the next check
		waitTimers(t, h)
		settleAll()
	}

	for i, c := range convs {
		want, state := c.expect()
		p, err := h.e.Process(context.Background(), ids[i])
		if err != nil {
			t.Fatal(err)
		}
		if p.State != state {
			t.Errorf("%s (%s): %s, want %s", c.user, ids[i], p.State, state)
			continue
		}
		alm := h.almanac(ids[i])
		for k, v := range want {
			if alm[k] != v {
				t.Errorf("%s: almanac %s = %#v, want %#v", c.user, k, alm[k], v)
			}
		}
		if p.Context["userId"] != c.user {
			t.Errorf("%s: instance has context %v", c.user, p.Context)
		}
	}
	// Every registered action ran once per action instance.
	b.mu.Lock()
	for key, k := range b.calls {
		if k != 1 {
			t.Errorf("chat.send %s ran %d times", key, k)
		}
	}
	b.mu.Unlock()
	kids, err := h.e.Processes(context.Background(), veena.ProcessFilter{Definition: "order-status-bot.order-lookup", State: "executing"})
	if err != nil {
		t.Fatal(err)
	}
	if len(kids.Items) != 0 {
		t.Errorf("%d look-up children still execute", len(kids.Items))
	}
}

// waitTimers waits until no timer is due at the test clock's time.
func waitTimers(t *testing.T, h *harness) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		next, err := h.e.NextTimer(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if next.IsZero() || next.After(h.clock.Now()) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timers due at %v are not fired", next)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
