package veena_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/pgtest"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/memstore"
	"github.com/veena-wf/veena/store/pgstore"
	"github.com/veena-wf/veena/store/sqlitestore"
)

// TestSameHistoryOnEveryStore runs random command sequences on an engine
// per backend in lockstep: every command must answer the same on all of
// them, and afterwards every process must have the same token history and
// events. Process ids come from a counter, so they agree too; the check's
// number leads them, five digits wide, so that a check's processes are
// the ones listed after its prefix.
func TestSameHistoryOnEveryStore(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	check := 0
	mk := func(st store.Store) *veena.Engine {
		k := kernel.New()
		n := 0
		k.NewID = func() string { n++; return fmt.Sprintf("c%05d-p%d", check, n) }
		e := open(t, st, veena.Options{Kernel: k, Clock: clk.Now})
		load(t, e, "wait", "split", "tokenset", "child", "parent", "delay")
		return e
	}
	sq, err := sqlitestore.Open(filepath.Join(t.TempDir(), "veena.db"), sqlitestore.Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	pg, err := pgstore.Open(ctx, pgtest.URL(), pgstore.Options{Schema: pgtest.Schema(t)})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"memory", "sqlite", "postgres"}
	engines := []*veena.Engine{mk(memstore.New()), mk(sq), mk(pg)}
	defer func() {
		for _, e := range engines {
			e.Close()
		}
	}()
	defs := []string{"wait", "split", "tokenset", "parent", "delay"}

	rapid.Check(t, func(rt *rapid.T) {
		check++
		// Each engine numbers processes from 1 again for this check.
		for _, e := range engines {
			n := 0
			e.Kernel().NewID = func() string { n++; return fmt.Sprintf("c%05d-p%d", check, n) }
		}
		ref := engines[0]
		var procs []string
		apply := func(what string, fn func(e *veena.Engine) (any, error)) {
			var first any
			var firstCode string
			for i, e := range engines {
				res, err := fn(e)
				code := ""
				if err != nil {
					code = veena.Code(err)
				}
				if i == 0 {
					first, firstCode = res, code
					continue
				}
				if code != firstCode {
					rt.Fatalf("%s: %s answers %q, memory %q (%v)", what, names[i], code, firstCode, err)
				}
				if diff := cmp.Diff(first, res, cmp.Comparer(func(a, b kernel.Value) bool { return a == b })); diff != "" {
					rt.Fatalf("%s: %s differs from memory (-memory +%s):\n%s", what, names[i], names[i], diff)
				}
			}
		}
		// tokens returns the node tokens of the tree's processes, by id.
		tokens := func(complete bool) []veena.NodeToken {
			var out []veena.NodeToken
			for _, id := range procs {
				h, err := ref.Tokens(ctx, id)
				if err != nil {
					rt.Fatal(err)
				}
				for _, nt := range h.NodeTokens {
					if nt.Complete == complete {
						out = append(out, nt)
					}
				}
			}
			sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
			return out
		}
		steps := rapid.IntRange(1, 25).Draw(rt, "steps")
		for range steps {
			switch op := rapid.IntRange(0, 9).Draw(rt, "op"); {
			case op <= 1 || len(procs) == 0:
				def := rapid.SampledFrom(defs).Draw(rt, "definition")
				env := map[string]any{"n": rapid.IntRange(0, 3).Draw(rt, "n")}
				if def == "delay" {
					env["ready"] = false
				}
				apply("start "+def, func(e *veena.Engine) (any, error) {
					return e.StartProcess(ctx, veena.StartRequest{Definition: def, Env: env})
				})
				page, err := ref.Processes(ctx, veena.ProcessFilter{Limit: 1000, ID: fmt.Sprintf("c%05d-", check), Oldest: true})
				if err != nil {
					rt.Fatal(err)
				}
				procs = procs[:0]
				for _, p := range page.Items {
					procs = append(procs, p.ID)
				}
			case op <= 5:
				active := tokens(false)
				if len(active) == 0 {
					continue
				}
				tok := rapid.SampledFrom(active).Draw(rt, "token")
				req := veena.CompleteRequest{}
				switch rapid.IntRange(0, 4).Draw(rt, "arcs") {
				case 1:
					req.Arcs = []*string{strp("other")}
				case 2:
					req.Arcs = []*string{}
				case 3:
					req.Arcs = []*string{nil, strp("fan")}
				case 4:
					req.Arcs = []*string{strp("fan")}
					req.TokenSet = &veena.TokenSetRequest{Name: "set", Count: rapid.IntRange(1, 3).Draw(rt, "count"),
						MemberEnv: map[string][]any{"i": {1, 2, 3}}}
				}
				req.Env = map[string]any{"by": tok.Node}
				apply("complete "+tok.ID, func(e *veena.Engine) (any, error) { return e.CompleteToken(ctx, tok.ID, req) })
			case op == 6:
				done := tokens(true)
				if len(done) == 0 {
					continue
				}
				tok := rapid.SampledFrom(done).Draw(rt, "backtrack")
				apply("backtrack "+tok.ID, func(e *veena.Engine) (any, error) { return e.Backtrack(ctx, tok.ID, "") })
			case op == 7:
				id := rapid.SampledFrom(procs).Draw(rt, "cancel")
				apply("cancel "+id, func(e *veena.Engine) (any, error) { return e.CancelProcess(ctx, id, "") })
			default:
				id := rapid.SampledFrom(procs).Draw(rt, "patch")
				v := rapid.IntRange(0, 9).Draw(rt, "value")
				apply("patch "+id, func(e *veena.Engine) (any, error) {
					return e.PatchProcessEnv(ctx, id, map[string]any{"x": v, "n": nil}, "")
				})
			}
		}
		for _, id := range procs {
			apply("process "+id, func(e *veena.Engine) (any, error) { return e.Process(ctx, id) })
			apply("tokens of "+id, func(e *veena.Engine) (any, error) { return e.Tokens(ctx, id) })
			apply("events of "+id, func(e *veena.Engine) (any, error) { return e.Events(ctx, id, 0, 0) })
		}
	})
}
