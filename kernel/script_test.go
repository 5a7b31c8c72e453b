package kernel

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dop251/goja"
	"github.com/veena-wf/veena/graph"
)

// rssMiB reads the resident memory of this process (Linux), or -1.
func rssMiB() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return kb >> 10
		}
	}
	return -1
}

// TestHostileScripts: scripts that allocate without bound or run for ever
// fail their command cleanly, within the memory limit and at the time
// limit (not at twice it), and change nothing.
func TestHostileScripts(t *testing.T) {
	// One second, so that a loaded machine's scheduling delays (a few
	// hundred milliseconds under a load average of 18 on two cores) stay
	// within the half of it allowed past the limit.
	const timeout = time.Second
	cases := []struct{ name, src, want string }{
		{"string doubling", `var s = "x"; for (;;) s += s;`, "memory"},
		{"array bomb", `var a = []; for (;;) a.push([1, 2, 3, 4, 5, 6, 7, 8]);`, "memory"},
		{"object bomb", `var o = {}; for (var i = 0; ; i++) o["k" + i] = i;`, "memory"},
		{"huge array", `Array.from({length: 1e9}, function (x, i) { return i; })`, "memory"},
		{"huge repeat", `"x".repeat(1 << 29)`, "memory"},
		{"typed array", `new Float64Array(1 << 28)`, "memory|invalid array buffer length"},
		{"infinite loop", `for (;;) {}`, "longer than 1s"},
		{"catastrophic regexp", `/(a+)+$/.test("a".repeat(40) + "b")`, "longer than 1s"},
		{"sort with comparator", `var a = []; for (var i = 0; i < 3e5; i++) a.push(i); for (;;) a.sort(function (x, y) { return y - x; });`, "longer than 1s"},
		{"deep recursion", `function f(n) { return f(n + 1) + 1; } f(0);`, "stack"},
	}
	base := rssMiB()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := testKernel()
			k.ScriptTimeout = timeout
			if !strings.Contains(c.want, "longer") {
				k.ScriptTimeout = 20 * time.Second * raceSlowdown // the memory limit must stop it, not the time limit
			}
			k.ScriptMemory = 32 << 20
			g := mkGraph(t, "hostile", N{Name: "W", Type: "wait", Start: true, Arcs: []string{"S"}},
				N{Name: "S", Type: "script", Custom: jsCustom(`env.set("before", 1); processEnv.set("p", 2); ` + c.src), Arcs: []string{"Z"}},
				N{Name: "Z", Type: "wait"})
			p := start(t, k, g, nil)
			before := fingerprint(p)
			began := time.Now()
			err := k.Engine(t0).Complete(token(t, p, "W"))
			took := time.Since(began)
			matched := false
			for _, w := range strings.Split(c.want, "|") {
				matched = matched || (err != nil && strings.Contains(err.Error(), w))
			}
			if !matched || !errors.Is(err, ErrExecutionFailed) {
				t.Fatalf("err = %v, want an execution failure mentioning %q", err, c.want)
			}
			if c.want == "longer than 1s" && (took < timeout || took > timeout+timeout/2*raceSlowdown) {
				t.Fatalf("the time limit of %s fired after %s", timeout, took)
			}
			if took > 10*time.Second*raceSlowdown {
				t.Fatalf("the script ran %s", took)
			}
			if fingerprint(p) != before {
				t.Fatal("the failed command changed the process")
			}
			if rss := rssMiB(); base > 0 && rss-base > 300*raceSlowdown {
				t.Fatalf("resident memory grew by %d MiB", rss-base)
			}
			t.Logf("%v after %s", err, took.Round(time.Millisecond))
		})
	}
}

// TestScriptSemantics: the bindings keep Sarasvati's script semantics:
// short and bean-style names, dates, numbers, engine.now, the external
// environment, and a script cannot leave anything behind for the next.
func TestScriptSemantics(t *testing.T) {
	var out strings.Builder
	k := testKernel()
	k.ScriptOutput = &out
	src := `
		var d = fullEnv.get("due");
		if (!(d instanceof Date) || d.getUTCFullYear() !== 2026) throw new Error("date attribute: " + d);
		env.set("nextDay", new Date(d.getTime() + 86400000));
		env.set("half", 0.5); env.set("whole", 3.0); env.set("big", 9007199254740993);
		env.set("s", "text"); env.set("b", false); env.set("obj", {a: 1}); env.set("nothing", null);
		token.getEnv().setAttribute("bean", token.getNode().getName() + ":" + token.node());
		if (engine.now().getTime() !== ` + fmt.Sprint(t0.UnixMilli()) + `) throw new Error("now");
		if (fullEnv.get("p") !== "proc" || !fullEnv.has("p") || env.has("p")) throw new Error("fullEnv");
		if (token.getProcess().getEnv().get("p") !== "proc") throw new Error("process env");
		env.set("names", env.names().join(","));
		try { Array.prototype.evil = 1; } catch (e) { console.log("frozen:", e instanceof TypeError); }
		try { leaked = 1; } catch (e) { System.out.println("no globals:", e instanceof ReferenceError); }
		processEnv.remove("gone");
		engine.complete(token, "x");
	`
	g := mkGraph(t, "sem", N{Name: "A", Type: "script", Start: true, Custom: jsCustom(src), Arcs: []string{"B", "C:x"}},
		N{Name: "B", Type: "wait"}, N{Name: "C", Type: "wait"})
	due := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	env := mustEnv(t, map[string]any{"p": "proc", "gone": 1, "due": due})
	for run := 0; run < 2; run++ { // the second run sees nothing the first left behind
		out.Reset()
		p, err := k.Engine(t0).Start(g, env)
		if err != nil {
			t.Fatal(err)
		}
		wantHistory(t, p, `[1 A C F] (C F 2) [2 C I F]`)
		a := p.NodeTokens[0]
		for name, want := range map[string]Value{
			"nextDay": Date(due.Add(24 * time.Hour)), "half": Float(0.5), "whole": Int(3), "big": Float(9007199254740992),
			"s": String("text"), "b": Bool(false), "obj": String("[object Object]"), "bean": String("A:A"),
			"names": String("b,bean,big,half,nextDay,obj,s,whole"),
		} {
			if v, _ := a.Env.Get(name); v != want {
				t.Errorf("%s = %v (%s), want %v (%s)", name, v, v.Kind(), want, want.Kind())
			}
		}
		if a.Env.Has("nothing") || p.Env.Has("gone") {
			t.Error("null did not remove, or processEnv.remove did not")
		}
		if want := "A: frozen: true\nA: no globals: true\n"; out.String() != want {
			t.Errorf("output %q, want %q", out.String(), want)
		}
	}
}

// scriptBench starts processes of one script node followed by a wait node.
func scriptBench(b *testing.B, typ string, register func(*Kernel)) {
	k := New()
	k.NewID = func() string { return "p" }
	if register != nil {
		register(k)
	}
	g := mkGraph(b, "bench", N{Name: "S", Type: typ, Start: true, Custom: jsCustom(`token.env().set("count", 3); env.set("flag", true); processEnv.set("p", "x");`), Arcs: []string{"W"}}, N{Name: "W", Type: "wait"})
	e := k.Engine(t0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.Start(g, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "µs/process")
}

// BenchmarkScriptNode compares a process whose first node runs a small
// script: in QuickJS with reused hardened realms (what Veena does), in a
// fresh QuickJS realm per script, in goja (Veena's earlier engine, which
// cannot bound memory), and with a plain node instead of the script.
func BenchmarkScriptNode(b *testing.B) {
	b.Run("quickjs", func(b *testing.B) { scriptBench(b, "script", nil) })
	b.Run("quickjs-fresh-realm", func(b *testing.B) {
		freshRealms = true
		defer func() { freshRealms = false }()
		scriptBench(b, "script", nil)
	})
	b.Run("goja", func(b *testing.B) {
		scriptBench(b, "gojascript", func(k *Kernel) { k.RegisterNodeType("gojascript", newGojaNode) })
	})
	b.Run("no-script", func(b *testing.B) { scriptBench(b, "node", nil) })
}

// gojaNode runs a script in goja with the same bindings the benchmark's
// script uses, as Veena's script nodes did before QuickJS.
type gojaNode struct{ prog *goja.Program }

func newGojaNode(n *graph.Node) (NodeType, error) {
	prog, err := goja.Compile(n.Name, n.Custom.Children[0].Text, true)
	return &gojaNode{prog}, err
}

func (g *gojaNode) Execute(e *Engine, t *NodeToken) error {
	vm := goja.New()
	vm.SetFieldNameMapper(goja.UncapFieldNameMapper())
	envOf := func(write func() *Env) map[string]any {
		return map[string]any{
			"set": func(name string, v goja.Value) {
				switch x := v.Export().(type) {
				case int64:
					write().Set(name, Int(x))
				case bool:
					write().Set(name, Bool(x))
				default:
					write().Set(name, String(v.String()))
				}
			},
			"get": func(name string) any { v, _ := write().Get(name); return v.Any() },
		}
	}
	env := envOf(t.writableEnv)
	_ = vm.Set("env", env)
	_ = vm.Set("processEnv", envOf(func() *Env { return t.Process.Env }))
	_ = vm.Set("token", map[string]any{"env": func() map[string]any { return env }})
	timer := time.AfterFunc(e.k.ScriptTimeout, func() { vm.Interrupt("timeout") })
	_, err := vm.RunProgram(g.prog)
	timer.Stop()
	if err != nil {
		return err
	}
	return e.Complete(t)
}
