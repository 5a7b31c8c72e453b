package snapshot_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/veena-wf/veena/format/wfxml"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/internal/snapshot"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/store"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func setup(t testing.TB) (*kernel.Kernel, *graph.Repository) {
	repo := graph.NewRepository()
	for _, n := range []string{"wait", "split", "delay", "child", "parent", "tokenset", "rework"} {
		src, err := os.ReadFile(filepath.Join("..", "..", "testdata", n+".wf.xml"))
		if err != nil {
			t.Fatal(err)
		}
		g, err := wfxml.Load(n+".wf.xml", src, repo.Latest)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := repo.Add(g); err != nil {
			t.Fatal(err)
		}
	}
	k := kernel.New()
	n := 0
	k.NewID = func() string { n++; return fmt.Sprintf("p%d", n) }
	k.Definitions = repo.Latest
	k.RegisterListener("audit", kernel.ListenerFunc(func(*kernel.Engine, *kernel.Event) kernel.EventActions { return 0 }))
	return k, repo
}

// roundTrip encodes every process of the tree, decodes the rows and checks
// that the result encodes the same, has the same history and the same
// active tokens.
func roundTrip(t *testing.T, repo *graph.Repository, root *kernel.Process) *kernel.Process {
	t.Helper()
	var rows []*store.Process
	root.Walk(func(p *kernel.Process) {
		r, err := snapshot.Record(p)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	})
	got, err := snapshot.DecodeTree(store.OrderTree(rows), func(name string, v int) (*graph.Graph, error) {
		return repo.Get(name, v), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want, have []*kernel.Process
	root.Walk(func(p *kernel.Process) { want = append(want, p) })
	got.Walk(func(p *kernel.Process) { have = append(have, p) })
	if len(want) != len(have) {
		t.Fatalf("%d processes decoded, want %d", len(have), len(want))
	}
	for i := range want {
		w, h := want[i], have[i]
		a, _ := snapshot.Encode(w)
		b, _ := snapshot.Encode(h)
		if !bytes.Equal(a, b) {
			t.Fatalf("process %s re-encodes differently:\n%s\n%s", w.ID, a, b)
		}
		for j, wt := range w.NodeTokens {
			ht := h.NodeTokens[j]
			if wt.Work != ht.Work {
				t.Fatalf("node token %d holds work %b, decoded %b", j, wt.Work, ht.Work)
			}
			if wt.Seq != ht.Seq || wt.CompleteSeq != ht.CompleteSeq {
				t.Fatalf("node token %d sequence numbers: %d/%d, decoded %d/%d", j, wt.Seq, wt.CompleteSeq, ht.Seq, ht.CompleteSeq)
			}
			if wt.CreatedNs != ht.CreatedNs || wt.CompletedNs != ht.CompletedNs || wt.DelayUntilNs != ht.DelayUntilNs {
				t.Fatalf("node token %d times: %v %v %v, decoded %v %v %v", j, wt.CreatedAt(), wt.CompletedAt(), wt.DelayUntil(), ht.CreatedAt(), ht.CompletedAt(), ht.DelayUntil())
			}
		}
		for j, wa := range w.ArcTokens {
			ha := h.ArcTokens[j]
			if wa.CreatedNs != ha.CreatedNs || wa.CompletedNs != ha.CompletedNs {
				t.Fatalf("arc token %d times differ", j)
			}
		}
		if w.History() != h.History() {
			t.Fatalf("history of %s:\nwant\n%s\nhave\n%s", w.ID, w.History(), h.History())
		}
		if fmt.Sprint(ids(w.ActiveNodeTokens())) != fmt.Sprint(ids(h.ActiveNodeTokens())) {
			t.Fatalf("active node tokens of %s differ", w.ID)
		}
		if len(w.ActiveArcTokens()) != len(h.ActiveArcTokens()) || w.State != h.State || w.Seq != h.Seq || w.EventSeq != h.EventSeq {
			t.Fatalf("process %s: state, sequence or waiting arc tokens differ", w.ID)
		}
		if (w.ParentToken == nil) != (h.ParentToken == nil) || (w.ParentToken != nil && w.ParentToken.ID != h.ParentToken.ID) {
			t.Fatalf("process %s: parent token differs", w.ID)
		}
	}
	return got
}

func ids(ts []*kernel.NodeToken) []int {
	var out []int
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

func only(t testing.TB, p *kernel.Process, node string) *kernel.NodeToken {
	t.Helper()
	for _, nt := range p.NodeTokens {
		if nt.Node.Name == node && nt.Active() {
			return nt
		}
	}
	t.Fatalf("no active token on %s:\n%s", node, p.History())
	return nil
}

func TestRoundTrip(t *testing.T) {
	k, repo := setup(t)
	e := k.Engine(t0)

	t.Run("TokenSetWithEnvironments", func(t *testing.T) {
		p, err := e.Start(repo.Latest("tokenset"), nil)
		if err != nil {
			t.Fatal(err)
		}
		setEnv := kernel.NewEnv()
		setEnv.Set("batch", kernel.String("b"))
		if _, err := e.CompleteWithNewTokenSet(only(t, p, "start"), "fan", "set", 3, setEnv,
			map[string][]kernel.Value{"i": {kernel.Int(0), kernel.Int(1), kernel.Int(2)}}); err != nil {
			t.Fatal(err)
		}
		if err := e.AddProcessListener(p, "audit", kernel.NodeTokenCreated, kernel.ProcessCompleted); err != nil {
			t.Fatal(err)
		}
		w := p.NodeTokens[1]
		w.SetAttr("note", kernel.Date(t0))
		w.SetTransient("secret", "never stored")
		p = roundTrip(t, repo, p)
		if _, ok := p.NodeTokens[1].FullEnv().Transient("secret"); ok {
			t.Fatal("a transient attribute was stored")
		}
		if v, _ := p.NodeTokens[1].Attr("note"); v != kernel.Date(t0) {
			t.Fatalf("token attribute: %v", v)
		}
		if len(p.Listeners) != 1 || p.Listeners[0].Name != "audit" || !p.Listeners[0].Mask.Has(kernel.ProcessCompleted) || p.Listeners[0].Mask.Has(kernel.ProcessStarted) {
			t.Fatalf("listeners after decode: %+v", p.Listeners)
		}
		m, _ := p.NodeTokens[3].Membership("set")
		if m.Member != 2 || m.MemberEnv().Len() != 1 {
			t.Fatalf("membership after decode: %+v", m)
		}
		// The decoded process runs on like the original.
		for _, nt := range p.ActiveNodeTokens() {
			if err := e.Complete(nt); err != nil {
				t.Fatal(err)
			}
		}
		p = roundTrip(t, repo, p)
		only(t, p, "done")
	})

	t.Run("NestedAndDelayed", func(t *testing.T) {
		p, err := e.Start(repo.Latest("parent"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Nested) != 1 {
			t.Fatalf("%d nested", len(p.Nested))
		}
		p = roundTrip(t, repo, p)
		if err := e.Complete(only(t, p.Nested[0], "c2")); err != nil {
			t.Fatal(err)
		}
		p = roundTrip(t, repo, p)
		only(t, p, "p2")

		env := kernel.NewEnv()
		env.Set("ready", kernel.Bool(false))
		d, err := e.Start(repo.Latest("delay"), env)
		if err != nil {
			t.Fatal(err)
		}
		d = roundTrip(t, repo, d)
		delayed := d.DelayedTokens()
		if len(delayed) != 1 || !delayed[0].DelayUntil().Equal(t0.Add(time.Minute)) {
			t.Fatalf("delayed tokens after decode: %v", delayed)
		}
		d.Env.Set("ready", kernel.Bool(true))
		if err := k.Engine(t0.Add(2 * time.Minute)).ReevaluateDelayedToken(delayed[0]); err != nil {
			t.Fatal(err)
		}
		d = roundTrip(t, repo, d)
		only(t, d, "end")
	})

	t.Run("JoinAndBacktrack", func(t *testing.T) {
		p, err := e.Start(repo.Latest("split"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Complete(only(t, p, "a")); err != nil {
			t.Fatal(err)
		}
		p = roundTrip(t, repo, p) // an arc token waits at the and join
		if err := e.Complete(only(t, p, "b")); err != nil {
			t.Fatal(err)
		}
		p = roundTrip(t, repo, p)
		if _, err := e.Backtrack(p.NodeTokens[1]); err != nil {
			t.Fatal(err)
		}
		p = roundTrip(t, repo, p)
		only(t, p, "a")
		if err := e.Cancel(p); err != nil {
			t.Fatal(err)
		}
		roundTrip(t, repo, p)
	})
}

func TestDecodeRejectsDamage(t *testing.T) {
	_, repo := setup(t)
	g := repo.Latest("wait")
	graphs := func(string, int) (*graph.Graph, error) { return g, nil }
	for _, snap := range []string{
		`{"q":1,"n":[{"n":99,"q":1,"t":1}]}`,
		`{"q":1,"n":[{"n":0,"q":1,"t":1,"p":[5]}]}`,
		`{"q":1,"n":[{"n":0,"q":1,"t":1,"e":3}]}`,
		`{"q":1,"n":[{"n":0,"q":1,"t":1}],"a":[{"a":0,"q":2,"p":0,"c":7,"t":1}]}`,
		`not json`,
	} {
		r := &store.Process{ID: "x", Root: "x", ParentToken: -1, Definition: "wait", Version: 1, State: "executing", Env: []byte(`{}`), Snapshot: []byte(snap)}
		if _, err := snapshot.Decode(r, graphs); err == nil {
			t.Errorf("decoded damaged snapshot %s", snap)
		}
	}
}

// TestDecodedProcessesBacktrackLikeTheOriginal runs random completions and
// backtracks on a process kept in memory and on its twin, which is encoded
// and decoded after every step: the histories must stay equal. Backtracking
// orders its traversal by completion sequence, so this fails if decoding
// loses anything backtracking reads.
func TestDecodedProcessesBacktrackLikeTheOriginal(t *testing.T) {
	k, repo := setup(t)
	for seed := uint64(1); seed <= 60; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		e := k.Engine(t0)
		name := []string{"split", "rework"}[seed%2]
		mem, err := e.Start(repo.Latest(name), nil)
		if err != nil {
			t.Fatal(err)
		}
		twin, err := e.Start(repo.Latest(name), nil)
		if err != nil {
			t.Fatal(err)
		}
		for step := 0; step < 20 && mem.State == kernel.Executing; step++ {
			twin = roundTrip(t, repo, twin)
			var act func(p *kernel.Process) error
			if active := mem.ActiveNodeTokens(); len(active) > 0 && r.IntN(3) > 0 {
				i := r.IntN(len(active))
				act = func(p *kernel.Process) error { return e.Complete(p.ActiveNodeTokens()[i]) }
			} else {
				var done []int
				for _, nt := range mem.NodeTokens {
					if nt.Complete && !nt.ExecType.IsBacktracked() {
						done = append(done, nt.ID)
					}
				}
				if len(done) == 0 {
					continue
				}
				id := done[r.IntN(len(done))]
				act = func(p *kernel.Process) error { _, err := e.Backtrack(p.NodeTokens[id]); return err }
			}
			errMem, errTwin := act(mem), act(twin)
			if (errMem == nil) != (errTwin == nil) {
				t.Fatalf("seed %d step %d: in memory %v, decoded %v", seed, step, errMem, errTwin)
			}
			if mem.History() != twin.History() {
				t.Fatalf("seed %d step %d: histories differ\n--- in memory\n%s--- decoded\n%s", seed, step, mem.History(), twin.History())
			}
		}
	}
}

// splitWithSharedEnv runs a split process to its join: the token on "a"
// has an attribute, which the tokens after it inherit (share).
func splitWithSharedEnv(t testing.TB) (*kernel.Process, *graph.Repository) {
	t.Helper()
	k, repo := setup(t)
	e := k.Engine(t0)
	p, err := e.Start(repo.Latest("split"), nil)
	if err != nil {
		t.Fatal(err)
	}
	a := only(t, p, "a")
	a.SetAttr("x", kernel.Int(1))
	if err := e.Complete(a); err != nil {
		t.Fatal(err)
	}
	if err := e.Complete(only(t, p, "b")); err != nil {
		t.Fatal(err)
	}
	return p, repo
}

// TestDecodedEnvironmentsCopyOnWrite: a child token inherits its parent's
// environment; after decoding they still share it, and a write through
// either one leaves the other as it was.
func TestDecodedEnvironmentsCopyOnWrite(t *testing.T) {
	p, repo := splitWithSharedEnv(t)
	p = roundTrip(t, repo, p)
	parent, child := p.NodeTokens[1], only(t, p, "last")
	if parent.Env.Key() != child.Env.Key() || parent.Env == child.Env {
		t.Fatal("the decoded tokens do not share their environment, each through an Env of its own")
	}
	child.Env.Set("x", kernel.Int(2)) // a write through the Env itself
	if v, _ := parent.Attr("x"); v != kernel.Int(1) {
		t.Fatalf("writing the child's environment changed its parent's: x=%v", v)
	}
	child.SetAttr("x", kernel.Int(2))
	if v, _ := parent.Attr("x"); v != kernel.Int(1) {
		t.Fatalf("writing the child's environment changed its parent's: x=%v", v)
	}
	parent.SetAttr("y", kernel.Int(3))
	if _, ok := child.Attr("y"); ok {
		t.Fatal("writing the parent's environment changed its child's")
	}
}

// BenchmarkEncode measures the snapshot of a split process whose tokens
// share one environment, as the engine writes it after every command.
func BenchmarkEncode(b *testing.B) {
	p, _ := splitWithSharedEnv(b)
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		if _, err := snapshot.Encode(p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/encode")
}
