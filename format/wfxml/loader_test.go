package wfxml_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/veena-wf/veena/format/wfxml"
	"github.com/veena-wf/veena/graph"
)

// def writes a definition named name with one start node name+"1", importing each
// of imports as an external, into dir/file.
func def(t *testing.T, dir, file, name string, imports ...string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "<process-definition name=%q xmlns=%q>\n", name, wfxml.Namespace)
	fmt.Fprintf(&b, "  <node name=\"%s1\" isStart=\"true\"/>\n", name)
	for i, imp := range imports {
		fmt.Fprintf(&b, "  <external name=\"e%d\" processDefinition=%q/>\n", i, imp)
	}
	b.WriteString("</process-definition>\n")
	path := filepath.Join(dir, file)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func versions(gs []*graph.Graph) []string {
	out := []string{}
	for _, g := range gs {
		out = append(out, g.String())
	}
	return out
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	// File order (a, b, sub/c, d) is not dependency order.
	def(t, dir, "a.wf.xml", "a", "b", "c")
	def(t, dir, "b.wf.xml", "b", "c")
	def(t, dir, "sub/c.wf.xml", "c")
	def(t, dir, "d.wf.xml", "d")
	if err := os.WriteFile(filepath.Join(dir, "notes.xml"), []byte("not a definition"), 0o644); err != nil {
		t.Fatal(err)
	}
	repo := graph.NewRepository()
	l := &wfxml.Loader{Repo: repo}

	added, err := l.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := versions(added), []string{"c v1", "b v1", "a v1", "d v1"}; !slices.Equal(got, want) {
		t.Errorf("first load added %q, want %q (externals first)", got, want)
	}
	a := repo.Latest("a")
	// a's own node, b's own node and b's import of c, then c's node.
	if got := qualifiedNames(a.Nodes); !slices.Equal(got, []string{"a1", "e0:b1", "e0:c1", "e1:c1"}) {
		t.Errorf("a nodes = %q", got)
	}

	// Nothing changed: nothing is loaded.
	added, err = l.LoadDir(dir)
	if err != nil || len(added) != 0 {
		t.Fatalf("second load added %q, %v; want nothing", versions(added), err)
	}

	// Changing c reloads c and everything depending on it, not d.
	if err := os.WriteFile(filepath.Join(dir, "sub/c.wf.xml"),
		[]byte(`<process-definition name="c"><node name="c1" isStart="true"><arc to="c2"/></node><node name="c2"/></process-definition>`), 0o644); err != nil {
		t.Fatal(err)
	}
	added, err = l.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := versions(added), []string{"c v2", "b v2", "a v2"}; !slices.Equal(got, want) {
		t.Errorf("after changing c added %q, want %q", got, want)
	}
	a2 := repo.Latest("a")
	if a2.Version != 2 || a2.Externals[0].Version != 2 || a2.Externals[1].Version != 2 {
		t.Errorf("a v%d imports b v%d and c v%d", a2.Version, a2.Externals[0].Version, a2.Externals[1].Version)
	}
	if got := arcStrings(a2.Arcs); !slices.Equal(got, []string{"e0:c1 -> e0:c2", "e1:c1 -> e1:c2"}) {
		t.Errorf("a v2 arcs = %q", got)
	}
	// Earlier versions stay as they were.
	if repo.Get("a", 1) != a || len(a.Arcs) != 0 {
		t.Errorf("a v1 changed")
	}

	added, err = l.LoadDir(dir)
	if err != nil || len(added) != 0 {
		t.Fatalf("third load added %q, %v; want nothing", versions(added), err)
	}
}

func TestLoadDirErrors(t *testing.T) {
	t.Run("missing external", func(t *testing.T) {
		dir := t.TempDir()
		def(t, dir, "a.wf.xml", "a", "b")
		def(t, dir, "b.wf.xml", "b", "nope")
		repo := graph.NewRepository()
		added, err := (&wfxml.Loader{Repo: repo}).LoadDir(dir)
		if len(added) != 0 || repo.Latest("a") != nil || repo.Latest("b") != nil {
			t.Errorf("added %q", versions(added))
		}
		file := filepath.Join(dir, "b.wf.xml")
		checkProblems(t, err, file, []problem{{3, 3, `external definition "nope" (instance "e0") is not loaded and is not in ` + dir}})
	})
	t.Run("external already in the repository", func(t *testing.T) {
		repo := graph.NewRepository()
		l := &wfxml.Loader{Repo: repo}
		first := t.TempDir()
		def(t, first, "lib.wf.xml", "lib")
		if _, err := l.LoadDir(first); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		def(t, dir, "app.wf.xml", "app", "lib")
		added, err := l.LoadDir(dir)
		if err != nil || !slices.Equal(versions(added), []string{"app v1"}) {
			t.Errorf("added %q, %v", versions(added), err)
		}
	})
	t.Run("cycle", func(t *testing.T) {
		dir := t.TempDir()
		def(t, dir, "a.wf.xml", "a", "b")
		def(t, dir, "b.wf.xml", "b", "a")
		def(t, dir, "c.wf.xml", "c")
		repo := graph.NewRepository()
		added, err := (&wfxml.Loader{Repo: repo}).LoadDir(dir)
		if len(added) != 0 || repo.Latest("c") != nil {
			t.Errorf("added %q despite the cycle", versions(added))
		}
		checkProblems(t, err, filepath.Join(dir, "a.wf.xml"), []problem{{1, 1, "dependency cycle: a -> b -> a"}})
	})
	t.Run("longer cycle", func(t *testing.T) {
		dir := t.TempDir()
		def(t, dir, "1.wf.xml", "top", "x")
		def(t, dir, "2.wf.xml", "x", "y")
		def(t, dir, "3.wf.xml", "y", "z")
		def(t, dir, "4.wf.xml", "z", "x")
		_, err := (&wfxml.Loader{Repo: graph.NewRepository()}).LoadDir(dir)
		if err == nil || !strings.Contains(err.Error(), "dependency cycle: x -> y -> z -> x") {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("every bad file is reported and nothing is loaded", func(t *testing.T) {
		dir := t.TempDir()
		def(t, dir, "good.wf.xml", "good")
		def(t, dir, "dup.wf.xml", "good")
		if err := os.WriteFile(filepath.Join(dir, "bad.wf.xml"), []byte("<process-definition name='bad'><node/></process-definition>"), 0o644); err != nil {
			t.Fatal(err)
		}
		repo := graph.NewRepository()
		added, err := (&wfxml.Loader{Repo: repo}).LoadDir(dir)
		if len(added) != 0 || repo.Latest("good") != nil {
			t.Errorf("added %q", versions(added))
		}
		msg := fmt.Sprint(err)
		for _, want := range []string{
			filepath.Join(dir, "bad.wf.xml") + `:1:32: <node> is missing required attribute "name"`,
			filepath.Join(dir, "good.wf.xml") + `:1:1: definition "good" is also defined in ` + filepath.Join(dir, "dup.wf.xml"),
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q\ndoes not contain %q", msg, want)
			}
		}
	})
	t.Run("store error", func(t *testing.T) {
		dir := t.TempDir()
		def(t, dir, "a.wf.xml", "a", "b")
		def(t, dir, "b.wf.xml", "b")
		repo := graph.NewRepository()
		refuse := errors.New("refused by validation")
		l := &wfxml.Loader{Repo: repo, Add: func(g *graph.Graph) (*graph.Graph, bool, error) {
			if g.Name == "a" {
				return nil, false, refuse
			}
			return repo.Add(g)
		}}
		added, err := l.LoadDir(dir)
		if !errors.Is(err, refuse) || !strings.Contains(err.Error(), "a.wf.xml") {
			t.Errorf("error = %v", err)
		}
		if !slices.Equal(versions(added), []string{"b v1"}) {
			t.Errorf("added %q", versions(added))
		}
	})
}

func TestLoaderFiles(t *testing.T) {
	dir := t.TempDir()
	def(t, dir, "pair.wf.xml", "p")
	repo := graph.NewRepository()
	l := &wfxml.Loader{Repo: repo}
	path := filepath.Join(dir, "pair.wf.xml")
	g, isNew, err := l.LoadFile(path)
	if err != nil || !isNew || g.Version != 1 || g.File != path {
		t.Fatalf("LoadFile = %v, %v, %v", g, isNew, err)
	}
	// The same content again is the same version.
	g2, isNew, err := l.LoadBytes("again.wf.xml", g.Source)
	if err != nil || isNew || g2 != g {
		t.Errorf("reload = %v, %v, %v; want v1, false", g2, isNew, err)
	}
	// Different content is the next version.
	g3, isNew, err := l.LoadBytes("p.wf.xml", []byte(`<process-definition name="p"><node name="x"/></process-definition>`))
	if err != nil || !isNew || g3.Version != 2 {
		t.Errorf("changed = %v, %v, %v; want v2, true", g3, isNew, err)
	}
	// An external resolves to the latest version in the repository.
	g4, _, err := l.LoadBytes("q.wf.xml", []byte(`<process-definition name="q"><node name="s"><arc external="i" to="x"/></node><external name="i" processDefinition="p"/></process-definition>`))
	if err != nil || g4.Externals[0].Version != 2 {
		t.Errorf("q = %v, %v", g4, err)
	}

	big := filepath.Join(dir, "big.wf.xml")
	if err := os.WriteFile(big, make([]byte, 2000), 0o644); err != nil {
		t.Fatal(err)
	}
	small := &wfxml.Loader{Repo: repo, Options: []wfxml.Option{wfxml.WithMaxBytes(1000)}}
	_, _, err = small.LoadFile(big)
	checkProblems(t, err, big, []problem{{0, 0, "file is 2000 bytes or more; the limit is 1000 bytes"}})

	if _, _, err := (&wfxml.Loader{}).LoadBytes("x.wf.xml", g.Source); err == nil {
		t.Error("a Loader without Repo or Add stored a graph")
	}
}
