package pnml_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veena-wf/veena/format/pnml"
	"github.com/veena-wf/veena/graph"
)

type problem struct {
	line, column int
	msg          string // a part of the message
}

func loadErr(t *testing.T, file string, src []byte, opts ...pnml.Option) *graph.LoadError {
	t.Helper()
	_, err := pnml.Load(file, src, opts...)
	if err == nil {
		t.Fatalf("%s loaded; want an error", file)
	}
	var le *graph.LoadError
	if !errors.As(err, &le) {
		t.Fatalf("%s: error %T %v, want *graph.LoadError", file, err, err)
	}
	return le
}

func expect(t *testing.T, le *graph.LoadError, want []problem) {
	t.Helper()
	if len(le.Problems) != len(want) {
		t.Errorf("%d problems, want %d:\n%v", len(le.Problems), len(want), le)
		return
	}
	for i, w := range want {
		p := le.Problems[i]
		if p.Line != w.line || p.Column != w.column || !strings.Contains(p.Message, w.msg) {
			t.Errorf("problem %d = %d:%d %q, want %d:%d %q", i, p.Line, p.Column, p.Message, w.line, w.column, w.msg)
		}
	}
}

// TestErrorFiles loads each file of testdata/errors and checks every
// problem reported, with its line and column.
func TestErrorFiles(t *testing.T) {
	cases := map[string][]problem{
		"billion_laughs":   {{2, 1, "DOCTYPE declarations are not allowed"}},
		"external_entity":  {{2, 1, "DOCTYPE declarations are not allowed"}},
		"undefined_entity": {{3, 32, "invalid character entity &xxe;"}},
		"not_xml":          {{1, 1, "not an XML file"}},
		"wrong_root":       {{2, 1, "root element is <process-definition>, want <pnml>"}},
		"wrong_namespace":  {{1, 1, `root element is in namespace "http://example.com/other"`}},
		"truncated":        {{4, 1, "unexpected EOF"}},
		"no_net":           {{1, 1, "the file has no <net>"}},
		"encoding":         {{1, 1, `encoding "UTF-16" is not supported`}},
		"symmetric":        {{3, 3, "net s is a symmetric (coloured) net"}},
		"coloured":         {{4, 39, `gives tokens of class "Red" (a coloured net)`}},
		"annotations": {
			{5, 40, `place a: annotation "ldap(&x": expected "," or ")", found end of annotation`},
			{6, 52, `transition t: annotation "go(x)/send(x, x)": argument x is given twice`},
			{9, 20, `transition u: annotation "recv(&y)/": an action must follow "/"`},
		},
		"structure": {
			{5, 43, `initial marking of place a: "many" is not a whole number`},
			{6, 7, `id "a" is used twice (first at line 5, column 7)`},
			{7, 43, "initial marking of place b: -2 is not between 0 and"},
			{8, 7, "<place> has no id"},
			{11, 7, "arc x1 joins place a to place b; an arc must join a place and a transition"},
			{12, 7, "arc x2 joins transition t to transition u"},
			{13, 7, `arc x3: target "nowhere" is not a place, a transition or a reference node of this file`},
			{14, 61, "inscription of arc x4: 0; an arc weighs at least 1"},
			{15, 61, `"[0,inf)" is a time interval (a timed-arc net)`},
			{16, 7, "arc x6 is an inhibitor arc from transition t"},
			{17, 7, "arc x7 is a reset arc"},
			{18, 7, "arc x8 needs a source and a target"},
			{19, 7, "reference node r1 refers to itself through a cycle"},
			{20, 7, "reference node r2 refers to itself through a cycle"},
			{21, 7, "referencePlace r3 refers to t, which is a transition"},
			{22, 7, "arc x9: source r1 is a reference node that stands for no place or transition"},
			{23, 53, "transition v has more than one <name>"},
		},
	}
	files, _ := filepath.Glob("testdata/errors/*.pnml")
	if len(files) != len(cases) {
		t.Errorf("%d files in testdata/errors, %d cases", len(files), len(cases))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".pnml")
		t.Run(name, func(t *testing.T) {
			want, ok := cases[name]
			if !ok {
				t.Fatalf("no case for %s", f)
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			le := loadErr(t, filepath.Base(f), src)
			if le.File != filepath.Base(f) {
				t.Errorf("error names file %q, want %q", le.File, filepath.Base(f))
			}
			expect(t, le, want)
		})
	}
}

const head = `<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml"><net id="n"><page id="p">`
const tail = `</page></net></pnml>`

// TestLimits checks that oversized and overdeep input is refused with the
// limit named, before it is read whole.
func TestLimits(t *testing.T) {
	cases := []struct {
		name string
		src  string
		opts []pnml.Option
		want problem
	}{
		{"file too large", head + strings.Repeat(" ", 2000) + tail, []pnml.Option{pnml.WithMaxBytes(1000)}, problem{1, 1, "the limit is 1000 bytes"}},
		{"attribute too long", head + `<place id="` + strings.Repeat("x", 70000) + `"/>` + tail, nil, problem{1, 86, `attribute "id" of <place> is 70000 bytes long; the limit is 65536 bytes`}},
		{"text too long", head + `<place id="a"><name><text>` + strings.Repeat("x", 70000) + `</text></name></place>` + tail, nil, problem{1, 112, "text of <text> is longer than 65536 bytes"}},
		{"too deep", head + strings.Repeat("<toolspecific>", 100) + strings.Repeat("</toolspecific>", 100) + tail, nil, problem{1, 940, "nested deeper than 64 levels"}},
		{"too many elements", head + strings.Repeat(`<toolspecific/>`, 50) + tail, []pnml.Option{pnml.WithMaxElements(20)}, problem{1, 341, "more than 20 elements"}},
		{"too many nodes", head + `<place id="a"/><place id="b"/><place id="c"/>` + tail, []pnml.Option{pnml.WithMaxNodes(2)}, problem{1, 116, "more than 2 places and transitions"}},
		{"too many arcs", head + `<place id="a"/><transition id="t"/><arc id="x" source="a" target="t"/><arc id="y" source="t" target="a"/>` + tail, []pnml.Option{pnml.WithMaxArcs(1)}, problem{1, 156, "more than 1 arcs"}},
		{"comment too long", head + "<!--" + strings.Repeat("-x", 200000) + "-->" + tail, nil, problem{1, 86, "longer than"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expect(t, loadErr(t, "f.pnml", []byte(c.src), c.opts...), []problem{c.want})
		})
	}
}

// TestBundleErrors: occurrences of a superposed place must agree on its
// initial marking; errors name the file they are in.
func TestBundleErrors(t *testing.T) {
	a := head + `<place id="x"><name><text>shared</text></name><initialMarking><text>1</text></initialMarking></place>` + tail
	b := `<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml"><net id="m"><page id="q">` +
		`<place id="y"><name><text>shared</text></name><initialMarking><text>2</text></initialMarking></place>` + tail
	_, err := pnml.LoadBundle([]pnml.File{{Name: "a.pnml", Source: []byte(a)}, {Name: "b.pnml", Source: []byte(b)}})
	if err == nil {
		t.Fatal("conflicting initial markings loaded")
	}
	want := "b.pnml:1:86: place x: initial marking 2 differs from the 1 stated for the same place at a.pnml:1:86"
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	bad := head + `<place id="x"><name><text>f(</text></name></place>` + tail
	_, err = pnml.LoadBundle([]pnml.File{{Name: "a.pnml", Source: []byte(a)}, {Name: "bad.pnml", Source: []byte(bad)}})
	var le *graph.LoadError
	if !errors.As(err, &le) || le.File != "bad.pnml" {
		t.Errorf("error %v, want one naming bad.pnml", err)
	}
}
