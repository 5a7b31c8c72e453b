package veena_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/store/memstore"
)

// step is one thing done to a process of an example: a node's active
// token completed (with arcs, environment or a token set), or backtracked
// to its completed token.
type step struct {
	node      string
	arcs      []string // nil: the default arcs
	noArc     bool
	env       map[string]any
	tokenSet  *veena.TokenSetRequest
	backtrack bool
	patch     map[string]any // merged into the process environment first
}

// nodesOf lists a process's node tokens as node:C, node:I or node:B
// (backtracked), in creation order.
func nodesOf(t *testing.T, e *veena.Engine, id string) string {
	t.Helper()
	h, err := e.Tokens(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tk := range h.NodeTokens {
		st := "I"
		switch {
		case strings.Contains(tk.ExecutionType, "backtracked"):
			st = "B"
		case tk.Complete:
			st = "C"
		}
		n := tk.Node
		if tk.External != "" {
			n = tk.External + ":" + n
		}
		out = append(out, n+":"+st)
	}
	return strings.Join(out, " ")
}

// TestExamples loads every file of testdata/examples (as veena definitions
// load does: externals first) and runs each example as its comment and the
// README describe it.
func TestExamples(t *testing.T) {
	ctx := context.Background()
	e := open(t, memstore.New(), veena.Options{TimerInterval: 50 * time.Millisecond})
	defer e.Close()
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("testdata", "examples", "*.wf.xml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	// Load in rounds: a file that imports one not loaded yet waits for the next.
	pending := files
	for len(pending) > 0 {
		var again []string
		var lastErr error
		for _, f := range pending {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := e.LoadDefinition(ctx, filepath.Base(f), src, ""); err != nil {
				again, lastErr = append(again, f), err
			}
		}
		if len(again) == len(pending) {
			t.Fatalf("examples that do not load: %v: %v", again, lastErr)
		}
		pending = again
	}
	sent := time.Now().Add(-1500 * time.Millisecond)
	cases := []struct {
		file  string
		env   map[string]any
		steps []step
		state string
		nodes string
		check func(t *testing.T, p *veena.Process)
	}{
		{file: "simplest", state: "completed", nodes: "node-one:C"},
		{file: "example2", state: "completed", nodes: "node-one:C node-two:C node-three:C"},
		{file: "example3", state: "completed", nodes: "node-one:C node-two:C node-three:C"},
		{file: "example4", state: "completed", nodes: "P:C Q:C R:C 1:A:C 2:A:C X:C 1:B:C 2:B:C Y:C Z:C"},
		{file: "external-env-three", state: "completed", nodes: "C:C two:B:C two:A:C", check: func(t *testing.T, p *veena.Process) {
			if p.Env["foo"].Str() != "goodbye" || p.Env["bar"].Str() != "world" {
				t.Errorf("the external environment seen: foo %v, bar %v; want goodbye and world", p.Env["foo"], p.Env["bar"])
			}
		}},
		{file: "example1", steps: []step{{node: "1"}, {node: "3"}, {node: "2"}}, state: "executing", nodes: "start:C 1:C 2:C 3:C 4:I"},
		{file: "example1", steps: []step{{node: "1"}, {node: "2"}, {node: "3"}, {node: "4"}}, state: "completed", nodes: "start:C 1:C 2:C 3:C 4:C"},
		{file: "split-join", env: map[string]any{"bigAmount": true}, steps: []step{{node: "legal"}, {node: "finance"}},
			state: "executing", nodes: "request:C legal:C finance:C file:C board:I done:C"},
		{file: "split-join", env: map[string]any{"bigAmount": false}, steps: []step{{node: "finance"}, {node: "legal"}},
			state: "completed", nodes: "request:C legal:C finance:C file:C board:C done:C"},
		{file: "named-arcs", steps: []step{{node: "review", arcs: []string{"reject"}}}, state: "completed", nodes: "review:C rejected:C"},
		{file: "named-arcs", steps: []step{{node: "review", arcs: []string{"approve", "notify"}}}, state: "executing", nodes: "review:C publish:I tell-author:I"},
		{file: "or-join", steps: []step{{node: "urgent"}, {node: "large"}}, state: "executing", nodes: "request:C urgent:C large:C notify:I notify:I"},
		{file: "first-join", steps: []step{{node: "by-phone"}, {node: "by-mail"}}, state: "executing", nodes: "ask:C by-mail:C by-phone:C escalate:I"},
		{file: "guards", env: map[string]any{"vip": true, "blocked": false, "express": false, "domestic": false},
			state: "executing", nodes: "order:C vip-desk:I express:C customs:I standard-ship:I"},
		{file: "guards", env: map[string]any{"vip": false, "express": true, "domestic": true},
			state: "executing", nodes: "order:C vip-desk:C express:I customs:C ship:I"},
		{file: "delay", env: map[string]any{"sent": sent, "paid": false}, state: "executing", nodes: "invoice:C remind:I", check: func(t *testing.T, p *veena.Process) {
			if len(p.WaitingAt) != 1 || p.WaitingAt[0].Kind != "delayed" || p.WaitingAt[0].Until == nil || !p.WaitingAt[0].Until.Equal(sent.Add(2*time.Second).UTC()) {
				t.Fatalf("remind waits as %+v, want delayed until sent + 2 s", p.WaitingAt)
			}
			// Paid meanwhile: when its time comes the guard discards the reminder.
			if _, err := e.PatchProcessEnv(ctx, p.ID, map[string]any{"paid": true}, ""); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				got, err := e.Process(ctx, p.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.State == "completed" {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("the delayed guard did not run again within 10 s: %s, %s", got.State, nodesOf(t, e, p.ID))
				}
				time.Sleep(50 * time.Millisecond)
			}
		}},
		{file: "token-set", steps: []step{
			{node: "assign", arcs: []string{"review"}, tokenSet: &veena.TokenSetRequest{Name: "reviewers", Count: 3,
				MemberEnv: map[string][]any{"reviewer": {"ann", "bob", "cy"}}}},
			{node: "review"}, {node: "review"},
		}, state: "executing", nodes: "assign:C review:C review:C review:I", check: func(t *testing.T, p *veena.Process) {
			h, _ := e.Tokens(ctx, p.ID)
			last := h.NodeTokens[len(h.NodeTokens)-1]
			if len(last.TokenSets) != 1 || last.TokenSets[0].Name != "reviewers" || last.TokenSets[0].Member != 2 {
				t.Fatalf("the last reviewer's token is in %+v, want member 2 of reviewers", last.TokenSets)
			}
			// The last member completes: the tokenSet join runs once.
			complete(t, e, last.ID, veena.CompleteRequest{})
			if got := nodesOf(t, e, p.ID); got != "assign:C review:C review:C review:C decide:I" {
				t.Fatalf("after the last member: %s", got)
			}
		}},
		{file: "joinlang", env: map[string]any{"override": false}, steps: []step{{node: "legal", arcs: []string{"legal"}}, {node: "sign-a", arcs: []string{"sign"}}},
			state: "executing", nodes: "start:C legal:C sign-a:C sign-b:I sign-c:I"},
		{file: "joinlang", env: map[string]any{"override": false}, steps: []step{{node: "sign-b", arcs: []string{"sign"}},
			{node: "legal", arcs: []string{"legal"}}, {node: "sign-a", arcs: []string{"sign"}}},
			state: "executing", nodes: "start:C legal:C sign-a:C sign-b:C sign-c:I release:I"},
		{file: "joinlang", env: map[string]any{"override": true}, steps: []step{{node: "legal", arcs: []string{"legal"}}},
			state: "executing", nodes: "start:C legal:C sign-a:I sign-b:I sign-c:I release:I"},
		{file: "environments", steps: []step{
			{node: "quote", env: map[string]any{"price": 90}}, {node: "check", env: map[string]any{"checked": true}},
		}, state: "executing", nodes: "start:C quote:C check:C join:C approve:I", check: func(t *testing.T, p *veena.Process) {
			h, _ := e.Tokens(ctx, p.ID)
			env := h.NodeTokens[len(h.NodeTokens)-1].Env
			if env["price"].IntValue() != 90 || !env["checked"].BoolValue() {
				t.Fatalf("approve's token has %v, want price 90 and checked from its two parents", env)
			}
		}},
		{file: "environments", steps: []step{{node: "quote"}, {node: "check", env: map[string]any{"checked": false}}},
			state: "completed", nodes: "start:C quote:C check:C join:C approve:C"},
		{file: "script", env: map[string]any{"quantity": 30, "unitPrice": 50}, state: "executing", nodes: "price:C manager:I",
			check: func(t *testing.T, p *veena.Process) {
				if p.Env["total"].IntValue() != 1500 {
					t.Errorf("total %v, want 1500", p.Env["total"])
				}
			}},
		{file: "script", env: map[string]any{"quantity": 3, "unitPrice": 50}, state: "executing", nodes: "price:C clerk:I"},
		{file: "nested", state: "executing", nodes: "receive:C inspection:I", check: func(t *testing.T, p *veena.Process) {
			kids, err := e.Processes(ctx, veena.ProcessFilter{ParentToken: one(t, e, p.ID, "inspection")})
			if err != nil || len(kids.Items) != 1 || kids.Items[0].Definition != "nested-child" {
				t.Fatalf("nested processes: %+v, %v", kids, err)
			}
			complete(t, e, one(t, e, kids.Items[0].ID, "inspect"), veena.CompleteRequest{})
			if got := nodesOf(t, e, p.ID); got != "receive:C inspection:C store:I" {
				t.Fatalf("after the nested process completed: %s", got)
			}
		}},
		{file: "backtrack", steps: []step{{node: "draft"}, {node: "legal"}, {node: "draft", backtrack: true}},
			state: "executing", nodes: "draft:B legal:B finance:B legal:B draft:I", check: func(t *testing.T, p *veena.Process) {
				// The history keeps every step: the first draft, both
				// reviews, legal's mirror; draft is active again.
				if len(p.WaitingAt) != 1 || p.WaitingAt[0].Node != "draft" {
					t.Fatalf("waiting at %+v, want draft only", p.WaitingAt)
				}
			}},
		{file: "stalled", steps: []step{{node: "check-stock"}, {node: "check-credit", noArc: true}}, state: "executing",
			nodes: "start:C check-stock:C check-credit:C", check: func(t *testing.T, p *veena.Process) {
				if !p.Stalled || len(p.Stall) != 1 || p.Stall[0].Node != "ship" {
					t.Fatalf("stalled %v, %+v; want the join ship", p.Stalled, p.Stall)
				}
			}},
	}
	tested := map[string]bool{"ext": true, "external-env-one": true, "external-env-two": true, "nested-child": true}
	for i, tc := range cases {
		tested[tc.file] = true
		t.Run(fmt.Sprintf("%d-%s", i, tc.file), func(t *testing.T) {
			p := start(t, e, veena.StartRequest{Definition: tc.file, Env: tc.env})
			for _, s := range tc.steps {
				if s.patch != nil {
					if _, err := e.PatchProcessEnv(ctx, p.ID, s.patch, ""); err != nil {
						t.Fatal(err)
					}
				}
				if s.backtrack {
					h, _ := e.Tokens(ctx, p.ID)
					for _, tk := range h.NodeTokens {
						if tk.Node == s.node && tk.Complete {
							if _, err := e.Backtrack(ctx, tk.ID, ""); err != nil {
								t.Fatalf("backtrack to %s: %v", s.node, err)
							}
						}
					}
					continue
				}
				req := veena.CompleteRequest{Env: s.env, TokenSet: s.tokenSet}
				for _, a := range s.arcs {
					req.Arcs = append(req.Arcs, strp(a))
				}
				if s.noArc {
					req.Arcs = []*string{}
				}
				complete(t, e, active(t, e, p.ID, s.node)[0], req)
			}
			got, err := e.Process(ctx, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tc.state {
				t.Errorf("state %s, want %s", got.State, tc.state)
			}
			if have := nodesOf(t, e, p.ID); !matchNodes(have, tc.nodes) {
				t.Errorf("tokens %s, want %s", have, tc.nodes)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".wf.xml")
		if !tested[name] {
			t.Errorf("example %s is not run by this test", name)
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !strings.Contains(string(readme), "testdata/examples/"+filepath.Base(f)) {
			t.Errorf("README.md has no line on %s", f)
		}
	}
}

// matchNodes compares token lists.
func matchNodes(have, want string) bool {
	return slices.Equal(strings.Fields(have), strings.Fields(want))
}
