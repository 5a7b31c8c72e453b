package wfxml_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veena-wf/veena/format/wfxml"
	"github.com/veena-wf/veena/graph"
)

// problem is an expected problem: its position and a fragment of its message.
type problem struct {
	line, col int
	msg       string
}

func (p problem) String() string { return fmt.Sprintf("%d:%d: %s", p.line, p.col, p.msg) }

// checkProblems asserts that err is a *graph.LoadError for file whose
// problems are exactly want, in order.
func checkProblems(t *testing.T, err error, file string, want []problem) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %v", want)
	}
	var le *graph.LoadError
	if !errors.As(err, &le) {
		t.Fatalf("error %T %q is not a *graph.LoadError", err, err)
	}
	if le.File != file {
		t.Errorf("LoadError.File = %q, want %q", le.File, file)
	}
	if len(le.Problems) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v\nwant %v", len(le.Problems), len(want), err, want)
	}
	for i, w := range want {
		p := le.Problems[i]
		if p.Line != w.line || p.Column != w.col || !strings.Contains(p.Message, w.msg) {
			t.Errorf("problem %d = %d:%d: %s\nwant %v", i, p.Line, p.Column, p.Message, w)
		}
	}
	// The message names the file and the position.
	if w := want[0]; w.line > 0 && !strings.Contains(err.Error(), fmt.Sprintf("%s:%d:%d: ", file, w.line, w.col)) {
		t.Errorf("error text %q does not name %s:%d:%d", err, file, w.line, w.col)
	}
}

func TestLoadErrors(t *testing.T) {
	// Externals resolve against the composition suite (pair, leaf, mid, ...).
	repo, _ := loadDir(t, "testdata/compose")
	tests := []struct {
		file string
		want []problem
	}{
		{"not_xml", []problem{{1, 1, "not an XML process definition: text before the root element"}}},
		{"truncated", []problem{{5, 1, "XML syntax error: unexpected EOF"}}},
		{"wrong_root", []problem{{2, 1, "root element is <definition>, want <process-definition>"}}},
		{"wrong_namespace", []problem{{2, 1, `root element is in namespace "http://www.omg.org/spec/BPMN/20100524/MODEL"`}}},
		{"missing_attribute", []problem{
			{2, 1, `<process-definition> is missing required attribute "name"`},
			{3, 3, `<node> is missing required attribute "name"`},
			{4, 5, `<arc> is missing required attribute "to"`},
			{6, 3, `attribute "name" of <node> must not be empty`},
			{10, 3, `<external> is missing required attribute "name"`},
			{11, 5, `<arc> is missing required attribute "from"`},
		}},
		{"duplicate_node", []problem{{5, 3, `duplicate node name "a" (first declared at 3:3)`}}},
		{"duplicate_external", []problem{{5, 3, `duplicate external name "e" (first declared at 4:3)`}}},
		{"arc_unknown_node", []problem{{5, 5, `arc to unknown node "nowhere"`}}},
		{"arc_unknown_external", []problem{
			{4, 5, `arc to unknown external "e9"`},
			{7, 5, `arc to unknown external "e8"`},
		}},
		{"external_arc_unknown", []problem{
			{4, 5, `arc to unknown node "Q" in external "e" (definition "pair")`},
			{7, 5, `arc from unknown node "Z" in external "e" (definition "pair")`},
			{8, 5, `arc to unknown node "Y" in external "e" (definition "pair")`},
		}},
		// Only an instance's own nodes can be named, not those it imported itself.
		{"imported_not_addressable", []problem{
			{4, 5, `arc to unknown node "C1" in external "m" (definition "mid")`},
			{7, 5, `arc from unknown node "C2" in external "m" (definition "mid")`},
		}},
		{"bad_values", []problem{
			{3, 3, `attribute "isStart" of <node>: "yes" is not a boolean`},
			{4, 3, `attribute "x" of <node>: "1.5" is not an integer`},
			{4, 3, `attribute "y" of <node>: "ten" is not an integer`},
			{5, 3, `attribute "joinType" of <node>: unknown join type "xor"`},
			{6, 3, `attribute "x" of <external>: "99999999999" is not an integer`},
		}},
		{"unknown_element", []problem{
			{4, 5, "unknown element <script> in <node>"},
			{5, 17, "<arc> may not contain elements (found <label>)"},
			{7, 3, "unknown element <task> in <process-definition>"},
			{9, 5, "unknown element <node> in <external>"},
		}},
		{"unknown_attribute", []problem{
			{2, 1, `unknown attribute "version" on <process-definition>`},
			{3, 3, `unknown attribute "isJoin" on <node>`},
			{4, 5, `unknown attribute "label" on <arc>`},
			{6, 3, `unknown attribute "type" on <external>`},
			{7, 5, `unknown attribute "fromExternal" on <arc>`},
		}},
		{"missing_external", []problem{{6, 3, `external definition "never-loaded" (instance "gone") is not loaded`}}},
		{"element_order", []problem{
			{5, 5, "<join> is out of order in <node>: it must come before <guard>"},
			{7, 5, "<arc> is out of order in <node>: it must come before <custom>"},
			{10, 3, "<node> is out of order in <process-definition>: it must come before <external>"},
			{12, 5, "<guard> appears more than once in <node>"},
			{14, 3, "<custom> is out of order in <process-definition>: it must come before <external>"},
		}},
		{"no_nodes", []problem{{2, 1, "<process-definition> has no <node>"}}},
		{"text_in_structure", []problem{
			{3, 3, "unexpected text in <process-definition>"},
			{5, 17, "<arc> may not contain text"},
		}},
		{"self_reference", []problem{{4, 3, `external "me" refers to definition "selfish" itself`}}},
		{"mixed_namespace", []problem{
			{4, 5, `unknown element <arc> (in namespace "urn:other") in <node>`},
			{6, 3, "unknown element <node> (in no namespace) in <process-definition>"},
		}},
		{"undefined_entity", []problem{{4, 26, "XML syntax error: invalid character entity &xxe;"}}},
		{"billion_laughs", []problem{{2, 1, "DOCTYPE declarations are not allowed"}}},
		{"external_entity", []problem{{2, 1, "DOCTYPE declarations are not allowed"}}},
		// The manual's custom-property example has an arc to a node it does
		// not declare, so it cannot load.
		{"manual_custom_foo", []problem{{7, 5, `arc to unknown node "1"`}}},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		seen[tc.file] = true
		t.Run(tc.file, func(t *testing.T) {
			file := tc.file + ".wf.xml"
			src, err := os.ReadFile(filepath.Join("testdata/errors", file))
			if err != nil {
				t.Fatal(err)
			}
			g, err := wfxml.Load(file, src, repo.Latest)
			if g != nil {
				t.Errorf("Load returned a graph with the error")
			}
			checkProblems(t, err, file, tc.want)
		})
	}
	files, _ := filepath.Glob("testdata/errors/*.wf.xml")
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".wf.xml"); !seen[name] {
			t.Errorf("%s has no test case", f)
		}
	}
}

// TestParseWithoutResolving: Parse reports the file's own problems only;
// externals are resolved by Compile.
func TestParseWithoutResolving(t *testing.T) {
	src, err := os.ReadFile("testdata/errors/missing_external.wf.xml")
	if err != nil {
		t.Fatal(err)
	}
	d, err := wfxml.Parse("m.wf.xml", src)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if d.Name() != "missing" {
		t.Errorf("Name() = %q", d.Name())
	}
	_, err = wfxml.Compile(d, func(string) *graph.Graph { return nil })
	checkProblems(t, err, "m.wf.xml", []problem{{6, 3, `external definition "never-loaded" (instance "gone") is not loaded`}})
}

// TestHostile: input built to exhaust memory or reach outside the file is
// refused with a clear message, before the decoder reads it all.
func TestHostile(t *testing.T) {
	const head = `<process-definition name="h" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">`
	deep := head + `<node name="a"><custom>` + strings.Repeat("<x>", 10_000) + strings.Repeat("</x>", 10_000) +
		`</custom></node></process-definition>`
	bigAttr := head + `<node name="a" type="` + strings.Repeat("A", 5<<20) + `"/></process-definition>`
	bigText := head + `<node name="a"><guard>` + strings.Repeat("x ", 40<<10) + `</guard></node></process-definition>`
	mediumAttr := head + `<node name="a" type="` + strings.Repeat("A", 100<<10) + `"/></process-definition>`
	manyNodes := func(n int) string {
		var b strings.Builder
		b.WriteString(head)
		for i := range n {
			fmt.Fprintf(&b, `<node name="n%d"/>`, i)
		}
		b.WriteString("</process-definition>")
		return b.String()
	}
	manyArcs := func(n int) string {
		var b strings.Builder
		b.WriteString(head + `<node name="a">`)
		for range n {
			b.WriteString(`<arc to="a"/>`)
		}
		b.WriteString("</node></process-definition>")
		return b.String()
	}
	col := len(head) + 1 // where the first element after the root's start tag begins
	tests := []struct {
		name string
		src  string
		opts []wfxml.Option
		want problem
	}{
		{"billion laughs", readFile(t, "testdata/errors/billion_laughs.wf.xml"), nil,
			problem{2, 1, "DOCTYPE declarations are not allowed"}},
		{"external entity", readFile(t, "testdata/errors/external_entity.wf.xml"), nil,
			problem{2, 1, "DOCTYPE declarations are not allowed"}},
		{"doctype without subset", `<?xml version="1.0"?><!DOCTYPE process-definition SYSTEM "http://example.com/x.dtd">` + head + `</process-definition>`, nil,
			problem{1, 22, "DOCTYPE declarations are not allowed"}},
		{"entity declaration inside the root", head + `<!ENTITY x "y"><node name="a"/></process-definition>`, nil,
			problem{1, col, "markup declarations (<!...>) are not allowed"}},
		{"10k-deep nesting", deep, nil,
			// root, node and custom are depth 1 to 3; the 62nd <x> is depth 65.
			problem{1, col + len(`<node name="a"><custom>`) + 61*len("<x>"), "elements are nested deeper than 64 levels"}},
		{"5 MiB attribute", bigAttr, nil,
			problem{0, 0, "file is 5243012 bytes; the limit is 4194304 bytes"}},
		{"5 MiB attribute, larger file limit", bigAttr, []wfxml.Option{wfxml.WithMaxBytes(64 << 20)},
			problem{1, col, "a tag, text or comment is longer than 263168 bytes"}},
		{"100 KiB attribute", mediumAttr, nil,
			problem{1, col, `attribute "type" of <node> is 102400 bytes long; the limit is 65536 bytes`}},
		{"80 KiB guard", bigText, nil,
			problem{1, col + len(`<node name="a"><guard>`), "text is 81920 bytes long; the limit is 65536 bytes"}},
		{"too many nodes", manyNodes(10_001), nil,
			problem{1, col + 17*10 + 18*90 + 19*900 + 20*9000, "definition has more than 10000 nodes"}},
		{"too many arcs", manyArcs(11), []wfxml.Option{wfxml.WithMaxArcs(10)},
			problem{1, col + len(`<node name="a">`) + 10*len(`<arc to="a"/>`), "definition has more than 10 arcs"}},
		{"size limit option", head + `<node name="a"/></process-definition>`, []wfxml.Option{wfxml.WithMaxBytes(50)},
			problem{0, 0, "file is 124 bytes; the limit is 50 bytes"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := wfxml.Parse("h.wf.xml", []byte(tc.src), tc.opts...)
			checkProblems(t, err, "h.wf.xml", []problem{tc.want})
		})
	}
	// 10,000 arcs is within the default limit of 100,000.
	if _, err := wfxml.Parse("ok.wf.xml", []byte(manyArcs(10_000))); err != nil {
		t.Errorf("10,000 arcs: %v", err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestComposedLimits: composition cannot multiply a graph past the limits.
func TestComposedLimits(t *testing.T) {
	repo := graph.NewRepository()
	l := &wfxml.Loader{Repo: repo, Options: []wfxml.Option{wfxml.WithMaxNodes(10)}}
	base := `<process-definition name="x4"><node name="a"><arc to="b"/></node><node name="b"/><node name="c"/><node name="d"/></process-definition>`
	if _, _, err := l.LoadBytes("x4.wf.xml", []byte(base)); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString(`<process-definition name="many"><node name="s"/>` + "\n")
	for i := range 3 {
		fmt.Fprintf(&b, `<external name="e%d" processDefinition="x4"/>`+"\n", i)
	}
	b.WriteString(`</process-definition>`)
	_, _, err := l.LoadBytes("many.wf.xml", b.Bytes())
	checkProblems(t, err, "many.wf.xml", []problem{{4, 1, `composed graph would have more than 10 nodes (instance "e2" of "x4" adds 4)`}})
}
