package schema_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/schema"
	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/memstore"
)

// clock is a test clock the test moves by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// bot is the chat-bot of the reference with its application actions: what
// it says is recorded per user, order numbers are parsed from the text,
// and order statuses come from a table the test sets.
type bot struct {
	mu       sync.Mutex
	said     map[string][]string // userId -> messages
	statuses map[string][]string // orderNo -> statuses of successive look-ups
	lookups  map[string]int      // orderNo -> look-ups so far
	fail     map[string]int      // orderNo -> look-ups that fail before one succeeds
	calls    map[string]int      // call key -> times run
}

func newBot() *bot {
	return &bot{said: map[string][]string{}, statuses: map[string][]string{}, lookups: map[string]int{}, fail: map[string]int{}, calls: map[string]int{}}
}

var orderRE = regexp.MustCompile(`[A-Z]-\d{4}`)

func (b *bot) runtime() *schema.Runtime {
	rt := schema.New()
	rt.Action("chat.send", func(ctx context.Context, c *schema.Call) (any, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.calls[c.Key]++
		text, _ := c.Arg("text").(string)
		b.said[c.Context["userId"]] = append(b.said[c.Context["userId"]], text)
		return nil, nil
	})
	rt.Action("step.record", func(ctx context.Context, c *schema.Call) (any, error) { return nil, nil })
	rt.Action("orders.parseNumber", func(ctx context.Context, c *schema.Call) (any, error) {
		text, _ := c.Arg("text").(string)
		return orderRE.FindString(text), nil
	})
	rt.Action("orders.fetchStatus", func(ctx context.Context, c *schema.Call) (any, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		no, _ := c.Arg("orderNo").(string)
		if b.fail[no] > 0 {
			b.fail[no]--
			return nil, errors.New("order service unavailable")
		}
		i := b.lookups[no]
		b.lookups[no]++
		st := b.statuses[no]
		if len(st) == 0 {
			return "unknown", nil
		}
		return st[min(i, len(st)-1)], nil
	})
	return rt
}

type harness struct {
	t     *testing.T
	e     *veena.Engine
	rt    *schema.Runtime
	clock *clock
}

func open(t *testing.T, st store.Store, b *bot, files ...string) *harness {
	t.Helper()
	rt := b.runtime()
	k := kernel.New()
	rt.Register(k)
	c := &clock{now: time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)}
	if st == nil {
		st = memstore.New()
	}
	e, err := veena.Open(context.Background(), veena.Options{Store: st, Kernel: k, Clock: c.Now, TimerInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rt.Attach(e)
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.LoadDefinition(context.Background(), f, src, ""); err != nil {
			t.Fatal(err)
		}
	}
	return &harness{t: t, e: e, rt: rt, clock: c}
}

const botFile = "../format/schema/testdata/valid/order-status-bot.yaml"

// settle waits until no instance, nor any child of one, has an action
// running or about to start (the actions run after commit, outside the
// caller's command; a parent may wait for an event from a child that is
// still at work).
func (h *harness) settle(ids ...string) {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		busy := ""
		for i := 0; i < len(ids); i++ {
			id := ids[i]
			in, err := h.rt.Nodes(context.Background(), id)
			if err != nil {
				h.t.Fatal(err)
			}
			for _, n := range in.Nodes {
				ids = append(ids, n.Children...)
				for _, a := range n.Actions {
					// An action not yet started (its visit has just begun,
					// the next step starts it) is work still to come.
					pending := a.State == schema.ActionPending && n.State == schema.NodeRunning
					if pending || a.State == schema.ActionRunning || (a.State == schema.ActionRetrying && a.Due != nil && !a.Due.After(h.clock.Now())) {
						busy = fmt.Sprintf("%s: %s/%s %s", id, n.Node, a.Name, a.State)
					}
				}
			}
			p, err := h.e.Process(context.Background(), id)
			if err != nil {
				h.t.Fatal(err)
			}
			_ = p
		}
		// A child's event to its parent waits in the parent's inbox
		// until it is applied.
		if busy == "" {
			if n, err := h.e.WaitingCommands(context.Background()); err != nil {
				h.t.Fatal(err)
			} else if n > 0 {
				busy = fmt.Sprintf("%d commands in the inboxes", n)
			}
		}
		if busy == "" {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("instances do not settle: %s", busy)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ended waits until an instance has ended (its last step may come from a
// child's event, which settle cannot see coming).
func (h *harness) ended(id string) {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		p, err := h.e.Process(context.Background(), id)
		if err != nil {
			h.t.Fatal(err)
		}
		if p.State != "executing" {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("instance %s has not ended", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) send(user, text string) *schema.SendResult {
	h.t.Helper()
	res, err := h.rt.Send(context.Background(), schema.Event{Name: "chat.message",
		Context: map[string]string{"channel": "web", "userId": user}, Payload: map[string]any{"text": text}})
	if err != nil {
		h.t.Fatalf("send %q for %s: %v", text, user, err)
	}
	return res
}

func (h *harness) almanac(id string) map[string]any {
	h.t.Helper()
	a, err := h.rt.Almanac(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]any{}
	for k, v := range a {
		out[k] = v.Any()
	}
	return out
}

func TestChatBotOneConversation(t *testing.T) {
	b := newBot()
	b.statuses["A-1234"] = []string{"in transit", "delivered"}
	h := open(t, nil, b, botFile)

	res := h.send("u42", "/order")
	if !res.Started {
		t.Fatal("the first /order did not start an instance")
	}
	id := res.Process.ID
	h.settle(id)
	if res := h.send("u42", "hello"); res.Process.ID != id || res.Started {
		t.Fatalf("second message went to %s (started %v), not %s", res.Process.ID, res.Started, id)
	}
	h.settle(id)
	h.send("u42", "it is A-1234")
	h.settle(id)
	// The lookup child ran and updated the parent.
	p, err := h.e.Process(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if p.State != "executing" {
		t.Fatalf("instance is %s", p.State)
	}
	alm := h.almanac(id)
	want := map[string]any{"attempts": int64(1), "checks": int64(1), "orderNo": "A-1234", "status": "in transit"}
	for k, v := range want {
		if alm[k] != v {
			t.Errorf("almanac %s = %#v, want %#v (almanac %v)", k, alm[k], v, alm)
		}
	}
	// Fifteen minutes later the timer fires: a second look-up says delivered.
	h.clock.Add(16 * time.Minute)
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, _ = h.e.Process(context.Background(), id)
		if p.State == "completed" || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.settle(id)
	if p.State != "completed" {
		in, _ := h.rt.Nodes(context.Background(), id)
		t.Fatalf("instance is %s after the timer, nodes %+v", p.State, in.Nodes)
	}
	alm = h.almanac(id)
	if alm["status"] != "delivered" || alm["checks"] != int64(2) {
		t.Errorf("almanac after the second look-up: %v", alm)
	}
	b.mu.Lock()
	said := strings.Join(b.said["u42"], " | ")
	b.mu.Unlock()
	wantSaid := "Which order number? | That is not an order number. Try again? | Order A-1234: in transit | Checking your order again. | Order A-1234: delivered | Anything else? Type /order."
	if said != wantSaid {
		t.Errorf("the bot said:\n%s\nwant:\n%s", said, wantSaid)
	}
	in, err := h.rt.Nodes(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var visits []string
	for _, n := range in.Nodes {
		visits = append(visits, n.Node+":"+n.State)
		for _, a := range n.Actions {
			if a.State != schema.ActionCompleted || a.Attempts != 1 || a.FinishedAt == nil {
				t.Errorf("%s/%s: %+v", n.Node, a.Name, a)
			}
		}
	}
	if got := strings.Join(visits, " "); got != "start:completed read-order:completed reprompt:completed read-order:completed lookup:completed await-lookup:completed wait:completed lookup:completed await-lookup:completed goodbye:completed" {
		t.Errorf("visits: %s", got)
	}
	// Two children, each completed, each with its own almanac.
	kids, err := h.e.Processes(context.Background(), veena.ProcessFilter{Definition: "order-status-bot.order-lookup"})
	if err != nil {
		t.Fatal(err)
	}
	if len(kids.Items) != 2 {
		t.Fatalf("%d lookup children", len(kids.Items))
	}
	for _, k := range kids.Items {
		if k.Parent != id || k.State != "completed" {
			t.Errorf("child %+v", k)
		}
	}
	for key, n := range b.calls {
		if n != 1 {
			t.Errorf("chat.send %s ran %d times", key, n)
		}
	}
}
