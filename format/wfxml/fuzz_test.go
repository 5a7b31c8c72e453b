package wfxml_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/veena-wf/veena/format/wfxml"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
)

// FuzzParse: any input is parsed without panicking; a failure is always a
// *graph.LoadError with at least one problem; a success compiles (with every
// external resolving to a small fixed graph) into a consistent graph.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.wf.xml")
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	for _, src := range []string{
		`<process-definition name="loop" xmlns="http://sarasvati.googlecode.com/ProcessDefinition"><node name="A" isStart="true"><arc to="A"/></node></process-definition>`,
		`<process-definition name="ab" xmlns="http://sarasvati.googlecode.com/ProcessDefinition"><node name="A" isStart="true"><arc to="B"/></node><node name="B"><arc to="A"/><arc to="A"/></node></process-definition>`,
		`<process-definition name="js" xmlns="http://sarasvati.googlecode.com/ProcessDefinition"><node name="A" type="script" isStart="true"><arc to="A"/><custom><execute type="js">for(;;){}</execute></custom></node></process-definition>`,
		`<process-definition name="nest" xmlns="http://sarasvati.googlecode.com/ProcessDefinition"><node name="A" type="nested" isStart="true"><custom><graphName>pair</graphName></custom></node></process-definition>`,
	} {
		f.Add([]byte(src))
	}
	pair, err := wfxml.Load("pair.wf.xml", []byte(`<process-definition name="pair"><node name="A" isStart="true"><arc to="B"/></node><node name="B"/></process-definition>`), nil)
	if err != nil {
		f.Fatal(err)
	}
	pair.Version = 1
	resolve := func(name string) *graph.Graph {
		if name == "missing" {
			return nil
		}
		return pair
	}
	checkErr := func(t *testing.T, err error) {
		var le *graph.LoadError
		if !errors.As(err, &le) {
			t.Fatalf("error %T is not a *graph.LoadError: %v", err, err)
		}
		if len(le.Problems) == 0 || le.File != "fuzz.wf.xml" {
			t.Fatalf("LoadError without problems or file: %#v", le)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		d, err := wfxml.Parse("fuzz.wf.xml", src)
		if err != nil {
			checkErr(t, err)
			return
		}
		if d.Name() == "" || len(d.Nodes) == 0 {
			t.Fatalf("parsed a document without name or nodes")
		}
		g, err := wfxml.Compile(d, resolve)
		if err != nil {
			checkErr(t, err)
			return
		}
		if g.Name != d.Name() || len(g.Nodes) < len(d.Nodes) || g.Hash == "" {
			t.Fatalf("graph %q with %d nodes from %d declared", g.Name, len(g.Nodes), len(d.Nodes))
		}
		inGraph := map[*graph.Node]bool{}
		for i, n := range g.Nodes {
			if n.Index != i {
				t.Fatalf("node %s has index %d at %d", n, n.Index, i)
			}
			inGraph[n] = true
		}
		for _, a := range g.Arcs {
			if !inGraph[a.From] || !inGraph[a.To] {
				t.Fatalf("arc %s leaves the graph", a)
			}
		}
		for _, n := range g.StartNodes() {
			if n.External != nil {
				t.Fatalf("imported node %s starts the composite", n)
			}
		}
		runLimited(t, g, resolve)
	})
}

// runLimited prepares a fuzzed graph in a kernel with small limits, checks
// it for runaway cycles, starts it and completes its waiting tokens a few
// times: whatever the graph, every command ends — in success or in an error
// with a stable code — within the command's budget.
func runLimited(t *testing.T, g *graph.Graph, resolve func(string) *graph.Graph) {
	k := kernel.New()
	k.Limits = kernel.Limits{CommandTokens: 2000, CommandTime: 2 * time.Second, ProcessTokens: 5000, TokenSetMembers: 100, NestingDepth: 4}
	k.ScriptTimeout, k.ScriptMemory = 100*time.Millisecond, 8<<20
	k.Definitions = func(name string) *graph.Graph { return resolve(name) }
	if err := k.Prepare(g); err != nil {
		return // an unknown node type, a guard that does not compile, …
	}
	k.RunawayWarnings(g)
	coded := func(what string, err error) {
		var ke *kernel.Error
		if err != nil && (!errors.As(err, &ke) || ke.Code == "") {
			t.Fatalf("%s: error without a code: %v", what, err)
		}
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	command := func(what string, fn func(e *kernel.Engine) error) {
		e := k.Engine(now)
		timer := time.AfterFunc(k.Limits.CommandTime, func() { e.Interrupt(nil) })
		began := time.Now()
		err := fn(e)
		timer.Stop()
		if d := time.Since(began); d > 10*time.Second {
			t.Fatalf("%s took %s", what, d)
		}
		coded(what, err)
	}
	var p *kernel.Process
	command("start", func(e *kernel.Engine) (err error) {
		p, err = e.Start(g, nil)
		return err
	})
	for i := 0; p != nil && i < 5; i++ {
		active := p.ActiveNodeTokens()
		if len(active) == 0 {
			return
		}
		command("complete", func(e *kernel.Engine) error { return e.Complete(active[0]) })
	}
}
