package kernel

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/veena-wf/veena/graph"
)

// TestJoinLangTokenSetWaitsForWholeSet: a `require tokenset` requirement
// contributes its arc tokens only once every member of the set is at the
// join (as the Java evaluator does). The first set of "s" fires J; a second
// set named "s" must then wait whole at J and merge both members at once,
// not merge its first member alone while the second is still on its way.
func TestJoinLangTokenSetWaitsForWholeSet(t *testing.T) {
	nodes := []N{
		{Name: "A1", Type: "wait", Start: true, Arcs: []string{"B"}},
		{Name: "A2", Type: "wait", Start: true, Arcs: []string{"B"}},
		{Name: "B", Type: "wait", Arcs: []string{"J"}},
		{Name: "J", Type: "wait", Join: "joinlang", Param: `require tokenset "s" when first`},
	}
	runScenarios(t, []confScenario{{
		name:  "second set waits whole",
		nodes: nodes,
		steps: []confStep{
			{desc: "A1 makes set s", do: doneSet("A1", "", "s", 2, nil, nil)},
			{desc: "first member of the first set waits", do: doneMember("B", "s", 0), want: `
				[1 A1 C F] (C F 3) (C F 4)
				[2 A2 I F]
				[3 B C F s 0] (I F J)
				[4 B I F s 1]`},
			{desc: "the first set is whole: J fires", do: doneMember("B", "s", 1), want: `
				[1 A1 C F] (C F 3) (C F 4)
				[2 A2 I F]
				[3 B C F s 0] (C F 5)
				[4 B C F s 1] (C F 5)
				[5 J I F s 0]`},
			{desc: "A2 makes a second set s", do: doneSet("A2", "", "s", 2, nil, nil)},
			{desc: "its first member waits at J", do: doneMember("B", "s", 0), want: `
				[1 A1 C F] (C F 3) (C F 4)
				[2 A2 C F] (C F 6) (C F 7)
				[3 B C F s 0] (C F 5)
				[4 B C F s 1] (C F 5)
				[5 J I F s 0]
				[6 B C F s 0] (I F J)
				[7 B I F s 1]`},
			{desc: "the second set is whole: both merge into J", do: doneMember("B", "s", 1), want: `
				[1 A1 C F] (C F 3) (C F 4)
				[2 A2 C F] (C F 6) (C F 7)
				[3 B C F s 0] (C F 5)
				[4 B C F s 1] (C F 5)
				[5 J I F s 0]
				[6 B C F s 0] (C F 5)
				[7 B C F s 1] (C F 5)`},
		},
	}})
}

// TestCompletingNestedTokenRefused: completing from outside a node token
// whose nested process still runs would orphan the child; it is refused,
// naming the child, and nothing changes. Once the child ends, the parent
// token completes by itself.
func TestCompletingNestedTokenRefused(t *testing.T) {
	k := testKernel()
	child := mkGraph(t, "child", N{Name: "C", Type: "wait", Start: true})
	k.Definitions = func(name string) *graph.Graph { return child }
	g := mkGraph(t, "parent", N{Name: "P", Type: "nested", Start: true, Custom: nestedCustom("child"), Arcs: []string{"Q"}}, N{Name: "Q", Type: "wait"})
	p := start(t, k, g, nil)
	pt := token(t, p, "P")
	before := p.History()
	err := k.Engine(t0).Complete(pt)
	if !errors.Is(err, ErrNestedProcessActive) || !strings.Contains(err.Error(), p.Nested[0].ID) {
		t.Fatalf("completing the nested token: %v, want %s naming %s", err, ErrNestedProcessActive.Code, p.Nested[0].ID)
	}
	if _, err := k.Engine(t0).CompleteWithNewTokenSet(pt, "", "s", 2, nil, nil); !errors.Is(err, ErrNestedProcessActive) {
		t.Fatalf("completing the nested token with a token set: %v", err)
	}
	if p.History() != before || p.Nested[0].State != Executing {
		t.Fatalf("a refused completion changed the tree:\n%s", p.History())
	}
	complete(t, k, p.Nested[0], "C")
	wantHistory(t, p, `[1 P C F] (C F 2) [2 Q I F]`)
}

// TestEnvCopyOnWriteEveryWriter: a child token shares its parent's
// environment until one of them writes, through any writer: Env.Set,
// Remove, SetTransient, RemoveTransient, Import, SetPersistent, and the
// token's and full environment's own methods.
func TestEnvCopyOnWriteEveryWriter(t *testing.T) {
	writers := map[string]func(e *Env){
		"Set":             func(e *Env) { e.Set("x", Int(2)) },
		"Set none":        func(e *Env) { e.Set("x", Value{}) },
		"Remove":          func(e *Env) { e.Remove("x") },
		"SetTransient":    func(e *Env) { e.SetTransient("tr", "other") },
		"RemoveTransient": func(e *Env) { e.RemoveTransient("tr") },
		"Import":          func(e *Env) { e.Import(mustEnv(t, map[string]any{"x": 9})) },
		"SetPersistent":   func(e *Env) { e.SetPersistent(map[string]Value{"y": Int(1)}) },
		"DropTransients":  func(e *Env) { e.DropTransients() },
	}
	for name, write := range writers {
		for _, who := range []string{"child", "parent"} {
			t.Run(name+" by "+who, func(t *testing.T) {
				k := testKernel()
				g := mkGraph(t, "cow", N{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}}, N{Name: "B", Type: "wait"})
				p := start(t, k, g, nil)
				a := token(t, p, "A")
				a.SetAttr("x", Int(1))
				a.SetTransient("tr", "live")
				complete(t, k, p, "A")
				b := token(t, p, "B")
				if a.Env.Key() != b.Env.Key() {
					t.Fatal("B does not share A's environment")
				}
				writer, other := b, a
				if who == "parent" {
					writer, other = a, b
				}
				write(writer.Env)
				if v, _ := other.Env.Get("x"); v != Int(1) || other.Env.Has("y") {
					t.Fatalf("%s's write reached the other token: x=%v", who, v)
				}
				if v, ok := other.Env.Transient("tr"); !ok || v != "live" {
					t.Fatalf("%s's write reached the other token's transients: %v %v", who, v, ok)
				}
			})
		}
	}
	t.Run("token and full env writers", func(t *testing.T) {
		k := testKernel()
		g := mkGraph(t, "cow", N{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}}, N{Name: "B", Type: "wait"})
		p := start(t, k, g, nil)
		a := token(t, p, "A")
		a.SetAttr("x", Int(1))
		complete(t, k, p, "A")
		b := token(t, p, "B")
		b.FullEnv().SetTransient("ft", 1)
		b.FullEnv().Set("x", Int(3))
		b.RemoveAttr("x")
		if v, _ := a.Env.Get("x"); v != Int(1) || a.Env.HasTransient("ft") {
			t.Fatal("a write through B's full environment reached A")
		}
		if !b.Env.HasTransient("ft") || p.Env.HasTransient("ft") {
			t.Fatal("a transient written through the full environment belongs to the token")
		}
		b.FullEnv().RemoveTransient("ft")
		if b.FullEnv().HasTransient("ft") {
			t.Fatal("full environment RemoveTransient")
		}
	})
}

// TestEnvHasAndTransients: Has is about persistent attributes and
// HasTransient about transient ones (the reference's hasAttribute and
// hasTransientAttribute), so removing one kind never leaves Has answering
// for the other.
func TestEnvHasAndTransients(t *testing.T) {
	e := NewEnv()
	e.SetTransient("t", 1)
	if e.Has("t") || !e.HasTransient("t") {
		t.Fatal("a transient is not a persistent attribute")
	}
	e.Remove("t")
	if !e.HasTransient("t") {
		t.Fatal("Remove removed a transient")
	}
	e.RemoveTransient("t")
	if e.HasTransient("t") || e.Has("t") {
		t.Fatal("RemoveTransient left the attribute")
	}
	e.Set("p", Int(1))
	e.SetTransient("p", "shadow")
	e.Remove("p")
	if e.Has("p") || !e.HasTransient("p") {
		t.Fatal("removing the persistent attribute touched the transient one")
	}
	if got := e.TransientNames(); len(got) != 1 || got[0] != "p" {
		t.Fatalf("TransientNames %v", got)
	}
}

// TestMemberEnvContract: a token set's member environment has the
// reference's per-index contract: reads out of range find nothing, writes
// out of range are errors (not panics), a list spreads over the members,
// removing by name removes at every index, transients per index.
func TestMemberEnvContract(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "members", N{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}}, N{Name: "B", Type: "wait"})
	p := start(t, k, g, nil)
	set, err := k.Engine(t0).CompleteWithNewTokenSet(token(t, p, "A"), "", "s", 3, mustEnv(t, map[string]any{"shared": "yes"}),
		map[string][]Value{"idx": strs("zero", "one", "two", "extra")})
	if err != nil {
		t.Fatal(err)
	}
	m := set.MemberEnv()
	if m.Members() != 3 {
		t.Fatalf("members %d", m.Members())
	}
	for i, want := range []string{"zero", "one", "two"} {
		if v, ok := m.Get(i, "idx"); !ok || v != String(want) {
			t.Fatalf("member %d idx = %v", i, v)
		}
	}
	for _, i := range []int{-1, 3, 100} {
		if _, ok := m.Get(i, "idx"); ok || m.Has(i, "idx") || len(m.Names(i)) != 0 || m.HasTransient(i, "x") {
			t.Fatalf("read at %d found something", i)
		}
		for what, err := range map[string]error{
			"Set":             m.Set(i, "idx", Int(1)),
			"Remove":          m.Remove(i, "idx"),
			"SetTransient":    m.SetTransient(i, "x", 1),
			"RemoveTransient": m.RemoveTransient(i, "x"),
		} {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("%s at %d: %v, want %s", what, i, err, ErrInvalidArgument.Code)
			}
		}
		if e := (Membership{Set: set, Member: i}).MemberEnv(); e.Len() != 0 {
			t.Fatalf("member env at %d", i)
		}
	}
	m.SetList("n", []Value{Int(10), Int(11)})
	if v, _ := m.Get(1, "n"); v != Int(11) || m.Has(2, "n") {
		t.Fatal("SetList spreads element i over member i and leaves the rest")
	}
	if err := m.Set(2, "n", Int(12)); err != nil {
		t.Fatal(err)
	}
	m.RemoveAll("n")
	for i := 0; i < 3; i++ {
		if m.Has(i, "n") {
			t.Fatalf("RemoveAll left member %d", i)
		}
	}
	if err := m.SetTransient(1, "tr", "t1"); err != nil {
		t.Fatal(err)
	}
	if v, ok := m.Transient(1, "tr"); !ok || v != "t1" || m.HasTransient(0, "tr") {
		t.Fatal("transients are per member")
	}
	m.RemoveTransientAll("tr")
	if m.HasTransient(1, "tr") {
		t.Fatal("RemoveTransientAll")
	}
	b, err := findToken(p, "B", "s", 2)
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := b.Membership("s")
	if v, _ := ms.MemberEnv().Get("idx"); v != String("two") {
		t.Fatalf("member 2 sees idx=%v", v)
	}
}

// fingerprint renders everything of a process tree a program can observe
// through the kernel: history, states, counters, events, environments
// (persistent and transient), active and waiting lists, the queue.
func fingerprint(p *Process) string {
	var b strings.Builder
	envs := func(label string, e *Env) {
		fmt.Fprintf(&b, "%s env %v", label, e.Map())
		for _, n := range e.TransientNames() {
			v, _ := e.Transient(n)
			fmt.Fprintf(&b, " ~%s=%v", n, v)
		}
		b.WriteString("\n")
	}
	p.Root().Walk(func(q *Process) {
		fmt.Fprintf(&b, "process %s %s seq=%d events=%d/%d dirty=%v active=%d/%d queued=%d nested=%d sets=%d listeners=%v\n%s",
			q.Graph.Name, q.State, q.Seq, q.EventSeq, len(q.Events), q.Dirty, len(q.ActiveNodeTokens()), len(q.ActiveArcTokens()), q.queued(), len(q.Nested), len(q.TokenSets), q.Listeners, q.History())
		envs("process", q.Env)
		for _, t := range q.NodeTokens {
			fmt.Fprintf(&b, "n%d %s complete=%v active=%v guard=%s exec=%s delay=%v/%d children=%d parents=%d sets=%v\n",
				t.ID, t.Node.Name, t.Complete, t.Active(), t.GuardAction, t.ExecType, t.DelayUntil(), t.DelayCount, len(t.Children), len(t.Parents), len(t.Sets))
			envs(fmt.Sprintf("n%d", t.ID), t.Env)
		}
		for _, a := range q.ArcTokens {
			fmt.Fprintf(&b, "a%d pending=%v complete=%v active=%v exec=%s child=%v\n", a.ID, a.Pending, a.Complete, a.Active(), a.ExecType, a.Child != nil)
		}
		for _, arc := range q.Graph.Arcs {
			for _, a := range q.WaitingAt(arc) {
				fmt.Fprintf(&b, "waiting %s: a%d\n", arc, a.ID)
			}
		}
		for _, s := range q.TokenSets {
			envs("set "+s.Name, s.Env)
			for i := 0; i < s.MemberEnv().Members(); i++ {
				envs(fmt.Sprintf("set %s member %d", s.Name, i), s.MemberEnv().Env(i))
			}
		}
	})
	return b.String()
}

// TestFailedCommandLeavesProcessAsItWas: a kernel command that fails —
// after it created tokens, fired events, wrote environments through every
// writer, started a nested process, made a token set — leaves the
// in-memory tree exactly as it was, so that an embedding program has
// nothing to reload; the next command then runs as if the failed one had
// never been tried.
func TestFailedCommandLeavesProcessAsItWas(t *testing.T) {
	boom := errors.New("boom")
	// A (wait) → S (script: writes everywhere) → T (tokenset maker) → B
	// (member waits) and A → N (nested) ; the join J fails on demand.
	setup := func(k *Kernel) {
		k.RegisterNodeType("mkset", tokenSetNode("s", 2, map[string]any{"se": 1}, map[string][]Value{"m": strs("a", "b")}))
		k.RegisterPredicate("fail", func(e *Engine, t *NodeToken) (bool, error) {
			if v, _ := t.FullEnv().Get("fail"); v == Bool(true) {
				return false, boom
			}
			return true, nil
		})
		k.AddGlobalListener("writer", ListenerFunc(func(e *Engine, ev *Event) EventActions {
			if t := ev.NodeToken(); t != nil && ev.Type == NodeTokenAccepted && t.Node.Name == "B" {
				t.Env.Set("listener", String("wrote")) // a direct write through the handle
				t.Process.Env.SetTransient("ptr", "x")
				for _, s := range t.Process.TokenSets {
					_ = s.MemberEnv().Set(0, "m", String("changed"))
					s.Env.Set("se", Int(2))
				}
			}
			return 0
		}), NodeTokenAccepted)
		child := mkGraph(t, "kid", N{Name: "K", Type: "wait", Start: true})
		k.Definitions = func(string) *graph.Graph { return child }
	}
	nodes := []N{
		{Name: "A", Type: "wait", Start: true, Arcs: []string{"S", "N"}},
		{Name: "S", Type: "script", Custom: jsCustom(`env.set("s", 1); processEnv.set("ps", "x"); fullEnv.set("f", 2);
			token.env().remove("keep"); processEnv.remove("gone");`), Arcs: []string{"T"}},
		{Name: "N", Type: "nested", Custom: nestedCustom("kid")},
		{Name: "T", Type: "mkset", Arcs: []string{"B"}},
		{Name: "B", Type: "node", Arcs: []string{"J"}},
		{Name: "J", Type: "wait", Join: "tokenSet", Guard: "if fail then Accept else Accept"},
		{Name: "W", Type: "wait", Start: true, Arcs: []string{"J2"}},
		{Name: "V", Type: "wait", Start: true, Arcs: []string{"J2"}},
		{Name: "J2", Type: "wait", Join: "and"},
	}
	run := func(failing bool) (*Process, string, string) {
		k := testKernel()
		setup(k)
		g := mkGraph(t, "rollback", nodes...)
		p := start(t, k, g, mustEnv(t, map[string]any{"gone": "g", "p0": 0}))
		a := token(t, p, "A")
		a.SetAttr("keep", Int(1))
		a.SetTransient("atr", "a")
		complete(t, k, p, "W") // an arc token waits at the and join J2
		if err := k.Engine(t0).CompleteAsync(token(t, p, "V")); err != nil {
			t.Fatal(err) // and one waits in the queue
		}
		p.Events = nil
		p.Dirty = false
		before := fingerprint(p)
		if failing {
			a.SetAttr("fail", Bool(true))
			a.Env.Set("fail", Bool(true))
			p.Dirty = false
			before = fingerprint(p)
			err := k.Engine(t0).Complete(a)
			if !errors.Is(err, ErrExecutionFailed) || !strings.Contains(err.Error(), "boom") {
				t.Fatalf("the command did not fail as planned: %v\n%s", err, p.History())
			}
			if after := fingerprint(p); after != before {
				t.Fatalf("the failed command changed the tree:\n--- before\n%s--- after\n%s", before, after)
			}
			a.Env.Remove("fail")
			p.Dirty = false
		}
		if err := k.Engine(t0).Complete(a); err != nil {
			t.Fatal(err)
		}
		if err := k.Engine(t0).ExecuteQueuedArcTokens(p); err != nil {
			t.Fatal(err)
		}
		return p, before, fingerprint(p)
	}
	_, _, want := run(false)
	_, _, have := run(true)
	if have != want {
		t.Fatalf("after a failed command the next one ran differently:\n--- want\n%s--- have\n%s", want, have)
	}
}

// TestRunawayCommandsFail: a cycle of nodes that never wait, a node whose
// arcs all lead back to itself, a definition that nests itself — each
// command fails with a stable code once it passes its budget, and changes
// nothing.
func TestRunawayCommandsFail(t *testing.T) {
	selfNest := []N{{Name: "R", Type: "nested", Start: true, Custom: nestedCustom("self")}}
	cases := []struct {
		name  string
		nodes []N
		want  *Error
	}{
		{"self loop", []N{{Name: "A", Start: true, Arcs: []string{"A"}}}, ErrBudgetExceeded},
		{"a-b-a", []N{{Name: "A", Start: true, Arcs: []string{"B"}}, {Name: "B", Arcs: []string{"A"}}}, ErrBudgetExceeded},
		{"fan back", []N{{Name: "A", Start: true, Arcs: []string{"A", "A", "A", "A", "A", "A", "A", "A"}}}, ErrBudgetExceeded},
		{"script loop", []N{{Name: "A", Type: "script", Start: true, Custom: jsCustom(`env.set("n", 1)`), Arcs: []string{"A"}}}, ErrBudgetExceeded},
		{"nests itself", selfNest, ErrLimitExceeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := testKernel()
			k.Limits.CommandTokens = 5000
			g := mkGraph(t, "self", c.nodes...)
			k.Definitions = func(string) *graph.Graph { return g }
			began := time.Now()
			p, err := k.Engine(t0).Start(g, nil)
			if !errors.Is(err, c.want) || p != nil {
				t.Fatalf("start: %v (process %v), want %s", err, p != nil, c.want.Code)
			}
			if d := time.Since(began); d > 20*time.Second {
				t.Fatalf("the runaway command took %s", d)
			}
			t.Log(err)
		})
	}
	// The same on a command after the start: the process stays as it was.
	k := testKernel()
	k.Limits.CommandTokens = 1000
	g := mkGraph(t, "later", N{Name: "W", Type: "wait", Start: true, Arcs: []string{"A"}}, N{Name: "A", Arcs: []string{"B"}}, N{Name: "B", Arcs: []string{"A"}})
	p := start(t, k, g, nil)
	before := fingerprint(p)
	if err := k.Engine(t0).Complete(token(t, p, "W")); !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("complete: %v", err)
	}
	if fingerprint(p) != before {
		t.Fatal("the failed command changed the process")
	}
}

// TestSizeLimits: a token set larger than the limit is refused before
// anything changes, and a process cannot grow past its token limit.
func TestSizeLimits(t *testing.T) {
	k := testKernel()
	k.Limits.TokenSetMembers = 100
	k.Limits.ProcessTokens = 50
	g := mkGraph(t, "sets", N{Name: "A", Type: "wait", Start: true, Arcs: []string{"B"}}, N{Name: "B", Type: "wait"})
	p := start(t, k, g, nil)
	before := fingerprint(p)
	_, err := k.Engine(t0).CompleteWithNewTokenSet(token(t, p, "A"), "", "s", 1_000_000, nil, nil)
	if !errors.Is(err, ErrLimitExceeded) || !strings.Contains(err.Error(), "1000000") || !strings.Contains(err.Error(), "TokenSetMembers") {
		t.Fatalf("a huge token set: %v", err)
	}
	_, err = k.Engine(t0).CompleteWithNewTokenSet(token(t, p, "A"), "", "s", 60, nil, nil)
	if !errors.Is(err, ErrLimitExceeded) || !strings.Contains(err.Error(), "ProcessTokens") {
		t.Fatalf("a process past its size: %v", err)
	}
	if fingerprint(p) != before {
		t.Fatal("a refused token set changed the process")
	}
	if _, err := k.Engine(t0).CompleteWithNewTokenSet(token(t, p, "A"), "", "s", 20, nil, nil); err != nil {
		t.Fatal(err)
	}
}

// TestInterruptStopsCommand: Interrupt (the caller's time budget) stops a
// running command, a script included, and the command changes nothing.
func TestInterruptStopsCommand(t *testing.T) {
	k := testKernel()
	k.ScriptTimeout = time.Minute
	g := mkGraph(t, "slow", N{Name: "W", Type: "wait", Start: true, Arcs: []string{"S"}},
		N{Name: "S", Type: "script", Custom: jsCustom(`for (;;) {}`)})
	p := start(t, k, g, nil)
	before := fingerprint(p)
	e := k.Engine(t0)
	time.AfterFunc(200*time.Millisecond, func() { e.Interrupt(nil) })
	began := time.Now()
	err := e.Complete(token(t, p, "W"))
	if !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("interrupted command: %v", err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Fatalf("the interrupt took %s to stop the script", d)
	}
	if fingerprint(p) != before {
		t.Fatal("the interrupted command changed the process")
	}
}

// TestInterruptStopsTokenLoop: an Interrupt that comes while a command
// creates tokens without end (no token budget, no size limit) stops it
// within budgetCheckEvery more tokens, and the command changes nothing.
func TestInterruptStopsTokenLoop(t *testing.T) {
	k := testKernel()
	k.Limits.CommandTokens, k.Limits.ProcessTokens = -1, -1
	g := mkGraph(t, "loop", N{Name: "W", Type: "wait", Start: true, Arcs: []string{"A"}}, N{Name: "A", Arcs: []string{"B"}}, N{Name: "B", Arcs: []string{"A"}})
	p := start(t, k, g, nil)
	before := fingerprint(p)
	e := k.Engine(t0)
	created, at := 0, -1
	k.AddGlobalListener("interrupter", ListenerFunc(func(e *Engine, ev *Event) EventActions {
		created++
		if created == 1000 {
			e.Interrupt(nil)
			at = created
		}
		return 0
	}), NodeTokenCreated, ArcTokenCreated)
	err := e.Complete(token(t, p, "W"))
	if !errors.Is(err, ErrBudgetExceeded) || !strings.Contains(err.Error(), "CommandTime") {
		t.Fatalf("interrupted loop: %v", err)
	}
	if at < 0 || created-at > budgetCheckEvery {
		t.Fatalf("interrupted at token %d, stopped at %d: more than %d tokens later", at, created, budgetCheckEvery)
	}
	if fingerprint(p) != before {
		t.Fatal("the interrupted command changed the process")
	}
}

// TestRunawayWarnings: the cycles a token can go round without reaching a
// wait state are found, and only those.
func TestRunawayWarnings(t *testing.T) {
	cases := []struct {
		name  string
		nodes []N
		want  []string // the nodes of each cycle
	}{
		{"self loop", []N{{Name: "A", Start: true, Arcs: []string{"A"}}}, []string{"A"}},
		{"a-b-a", []N{{Name: "S", Type: "wait", Start: true, Arcs: []string{"A"}}, {Name: "A", Arcs: []string{"B"}}, {Name: "B", Arcs: []string{"A"}}}, []string{"A,B"}},
		{"a wait node in the cycle", []N{{Name: "A", Start: true, Arcs: []string{"B"}}, {Name: "B", Type: "wait", Arcs: []string{"A"}}}, nil},
		{"a named arc a node never takes", []N{{Name: "A", Start: true, Arcs: []string{"B:back"}}, {Name: "B", Arcs: []string{"A"}}}, nil},
		{"a named arc a guard may skip to", []N{{Name: "A", Start: true, Guard: "Skip back", Arcs: []string{"B:back"}}, {Name: "B", Arcs: []string{"A"}}}, []string{"A,B"}},
		{"a first join merges", []N{{Name: "A", Start: true, Join: graph.JoinFirst, Arcs: []string{"B"}}, {Name: "B", Arcs: []string{"A"}}}, nil},
		{"an and join with two inputs waits", []N{{Name: "S", Start: true, Arcs: []string{"A"}}, {Name: "A", Join: graph.JoinAnd, Arcs: []string{"B"}}, {Name: "B", Arcs: []string{"A"}}}, nil},
		{"an and join with one input fires", []N{{Name: "A", Start: true, Join: graph.JoinAnd, Arcs: []string{"A"}}}, []string{"A"}},
		{"a script on a named arc", []N{{Name: "A", Type: "script", Start: true, Custom: jsCustom(`1`), Arcs: []string{"A:again"}}}, []string{"A"}},
		{"two cycles", []N{{Name: "A", Start: true, Arcs: []string{"B", "C"}}, {Name: "B", Arcs: []string{"A"}}, {Name: "C", Arcs: []string{"D"}}, {Name: "D", Type: "script", Custom: jsCustom(`1`), Arcs: []string{"C"}}}, []string{"A,B", "C,D"}},
		{"a custom type is taken to wait", []N{{Name: "A", Type: "task", Start: true, Arcs: []string{"A"}}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := testKernel()
			k.RegisterNodeType("task", func(*graph.Node) (NodeType, error) {
				return NodeTypeFunc(func(*Engine, *NodeToken) error { return nil }), nil
			})
			g := mkGraph(t, "cycles", c.nodes...)
			if err := k.Prepare(g); err != nil {
				t.Fatal(err)
			}
			var have []string
			for _, cyc := range graph.RunawayCycles(g, func(n *graph.Node, a *graph.Arc) bool {
				im, ok := n.Runtime.(*nodeRuntime).typ.(Immediate)
				return ok && im.TakesAtOnce(n, a)
			}) {
				var names []string
				for _, n := range cyc {
					names = append(names, n.Name)
				}
				have = append(have, strings.Join(names, ","))
			}
			if strings.Join(have, " ") != strings.Join(c.want, " ") {
				t.Fatalf("cycles %v, want %v", have, c.want)
			}
			ws := k.RunawayWarnings(g)
			if len(ws) != len(c.want) {
				t.Fatalf("%d warnings for %d cycles: %v", len(ws), len(c.want), ws)
			}
			for _, w := range ws {
				if !strings.Contains(w.Message, "without a wait state") {
					t.Fatalf("warning %q", w.Message)
				}
			}
		})
	}
}

// TestTreesLetGoOfTheJournal: a tree points to the journal of the command
// running on it only while that command runs, however the tree was made.
// Otherwise an environment written between commands (as the engine writes
// a patch) is saved in whatever command the engine runs next, on another
// tree, and that command's failure undoes the write.
func TestTreesLetGoOfTheJournal(t *testing.T) {
	k := testKernel()
	g := mkGraph(t, "waits", N{Name: "W", Type: "wait", Start: true})
	e := k.Engine(t0)
	starts := []struct {
		name  string
		start func() (*Process, error)
	}{
		{"Start", func() (*Process, error) { return e.Start(g, nil) }},
		{"StartWith", func() (*Process, error) { return e.StartWith(g, nil, nil, nil) }},
		{"StartAt", func() (*Process, error) { return e.StartAt(g, nil, g.Nodes[0]) }},
	}
	for _, s := range starts {
		p, err := s.start()
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if p.journal != nil {
			t.Errorf("%s: the new tree still points to the journal after its command", s.name)
		}
		q := start(t, k, g, nil)
		if !e.Reuse(t0) {
			t.Fatal("the engine cannot be reused")
		}
		// The next command, on q, writes p's environment the way a caller
		// outside any command does, then fails.
		err = e.run(q, func() {
			p.Env.Set("patched", Int(1))
			e.Fail(errors.New("the command fails"))
		})
		if err == nil {
			t.Fatalf("%s: the failing command did not fail", s.name)
		}
		if v, _ := p.Env.Get("patched"); v != Int(1) {
			t.Errorf("%s: the other tree's failed command undid a write to this one's environment", s.name)
		}
	}
}
