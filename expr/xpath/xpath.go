// Package xpath evaluates XPath conditions over a process's data, as
// MarkLogic Workflow's models write them: the process is an XML document
//
//	<wf:process xmlns:wf="http://marklogic.com/workflow">
//	  <wf:data><name>value</name>…</wf:data>
//	  <wf:attachments><wf:attachment name="…" uri="…" cardinality="1"/>…</wf:attachments>
//	</wf:process>
//
// bound to $wf:process ($processData is its wf:data). The XPath 1.0 engine
// is github.com/antchfx/xpath; the XPath 2.0 forms MarkLogic's models use
// are rewritten before compiling: fn: prefixes, fn:empty and fn:exists,
// the value comparisons lt, le, gt, ge, eq, ne, xs:string and the numeric
// casts, and xs:dateTime/fn:current-dateTime compared as instants.
// fn:doc (reading another document) is refused: an expression sees the
// process document only. Evaluation is read-only and bounded: the
// document is built from the variables, and the expression and document
// sizes are limited.
package xpath

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/antchfx/xmlquery"
	"github.com/antchfx/xpath"
	"github.com/veena-wf/veena/expr"
)

// NS is MarkLogic Workflow's namespace.
const NS = "http://marklogic.com/workflow"

// Attachment is a named document reference of a process.
type Attachment struct {
	Name, URI   string
	Cardinality int
}

// WithAttachments is implemented by variables that carry the process's
// attachments.
type WithAttachments interface {
	Attachments() []Attachment
}

// Program is a compiled XPath expression.
type Program struct {
	src, rewritten string
	ns             map[string]string
	x              *xpath.Expr
	usesNow        bool
	usesDoc        bool
}

// ErrDoc is the evaluation of an expression that reads another document
// (fn:doc): Veena keeps references to documents, not their content.
var ErrDoc = fmt.Errorf("fn:doc is not supported: a condition reads the process document only (its data and attachment references)")

// UsesDoc reports whether the expression reads another document with
// fn:doc, which fails when it is evaluated.
func (p *Program) UsesDoc() bool { return p.usesDoc }

// Source is the expression as written.
func (p *Program) Source() string { return p.src }

// Language is XPath.
func (p *Program) Language() expr.Language { return expr.XPath }

const maxLen = 8 << 10

// CompileCondition compiles an expression whose value is read as a
// boolean (XPath's boolean(): a node-set is true when it is not empty, a
// string when it is not empty, a number when it is not zero).
func CompileCondition(src string, ns map[string]string) (*Program, error) {
	p, err := compile(src, ns, true)
	return p, err
}

// Compile compiles an expression; ns maps the prefixes it uses to
// namespaces (wf, fn and xs are known).
func Compile(src string, ns map[string]string) (*Program, error) {
	return compile(src, ns, false)
}

func compile(src string, ns map[string]string, asBoolean bool) (*Program, error) {
	fail := func(off int, msg string) (*Program, error) {
		return nil, &expr.Error{Lang: expr.XPath, Source: src, Offset: off, Msg: msg}
	}
	if len(src) > maxLen {
		return fail(-1, fmt.Sprintf("longer than %d bytes", maxLen))
	}
	if strings.TrimSpace(src) == "" {
		return fail(0, "empty expression")
	}
	names := map[string]string{"wf": NS}
	for k, v := range ns {
		if k != "" {
			names[k] = v
		}
	}
	p := &Program{src: src, ns: names, usesDoc: indexOutsideStrings(src, "doc(") >= 0}
	rw, usesNow, err := rewrite(src)
	if err != nil {
		return fail(-1, err.Error())
	}
	if asBoolean {
		rw = "boolean(" + rw + ")"
	}
	p.rewritten, p.usesNow = rw, usesNow
	if p.usesDoc {
		return p, nil // it fails when evaluated (ErrDoc)
	}
	x, err := xpath.CompileWithNS(p.withNow(time.Unix(0, 0)), names)
	if err != nil {
		return fail(-1, err.Error())
	}
	p.x = x
	return p, nil
}

const nowMark = "\x00now\x00"

func (p *Program) withNow(t time.Time) string {
	if !p.usesNow {
		return p.rewritten
	}
	return strings.ReplaceAll(p.rewritten, nowMark, strconv.FormatInt(t.Unix(), 10))
}

// xpathREs are the regular expressions rewrite uses, compiled at its first
// use: a program that reads no XPath does not keep them.
var xpathREs = sync.OnceValue(func() *rewriteREs {
	return &rewriteREs{
		process:  regexp.MustCompile(`\$wf:process\b`),
		data:     regexp.MustCompile(`\$processData\b`),
		fn:       regexp.MustCompile(`\bfn:`),
		empty:    regexp.MustCompile(`\bempty\(`),
		exists:   regexp.MustCompile(`\bexists\(`),
		cmp:      regexp.MustCompile(`\s(lt|le|gt|ge|eq|ne)\s`),
		xsStr:    regexp.MustCompile(`\bxs:string\(`),
		xsNum:    regexp.MustCompile(`\bxs:(integer|decimal|double|float|int|long)\(`),
		xsBool:   regexp.MustCompile(`\bxs:boolean\(`),
		xsDate:   regexp.MustCompile(`\bxs:(dateTime|date)\(\s*("[^"]*"|'[^']*')\s*\)`),
		now:      regexp.MustCompile(`\bcurrent-(dateTime|date)\(\s*\)`),
		otherVar: regexp.MustCompile(`\$[A-Za-z_][\w.:-]*`),
		dataObj:  regexp.MustCompile(`\bbpmn:getDataObject\(\s*(?:'([\w.-]+)'|"([\w.-]+)")\s*\)`),
		seqCmp:   regexp.MustCompile(`([\w/:@.\[\]()-]+?)\s*(!=|=)\s*\(\s*((?:"[^"]*"|'[^']*')(?:\s*,\s*(?:"[^"]*"|'[^']*'))+)\s*\)`),
		seqItem:  regexp.MustCompile(`"[^"]*"|'[^']*'`),
	}
})

// rewriteREs are the forms rewrite finds and rewrites.
type rewriteREs struct {
	process, data, fn, empty, exists, cmp, xsStr, xsNum, xsBool, xsDate, now, otherVar, dataObj, seqCmp, seqItem *regexp.Regexp
}

var cmpOps = map[string]string{"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "=", "ne": "!="}

// rewrite turns MarkLogic's XPath 2.0 forms into XPath 1.0, outside string
// literals.
func rewrite(src string) (string, bool, error) {
	re := xpathREs()
	// BPMN's XPath function getDataObject('x') reads a data object: the
	// variable x. A value of false (or empty) selects no node, so that
	// not(bpmn:getDataObject('x')) is true for it.
	src = re.dataObj.ReplaceAllStringFunc(src, func(m string) string {
		sm := re.dataObj.FindStringSubmatch(m)
		name := sm[1] + sm[2]
		return "/wf:process/wf:data/" + name + "[. != 'false' and . != '']"
	})
	usesNow := false
	var out strings.Builder
	for _, seg := range splitStrings(src) {
		if seg.literal {
			out.WriteString(seg.text)
			continue
		}
		s := seg.text
		s = re.process.ReplaceAllString(s, "/wf:process")
		s = re.data.ReplaceAllString(s, "/wf:process/wf:data")
		if m := re.otherVar.FindString(s); m != "" {
			return "", false, fmt.Errorf("variable %s is not defined (use $wf:process or $processData)", m)
		}
		s = re.fn.ReplaceAllString(s, "")
		s = re.empty.ReplaceAllString(s, "not(")
		s = re.exists.ReplaceAllString(s, "boolean(")
		s = re.cmp.ReplaceAllStringFunc(s, func(m string) string { return " " + cmpOps[strings.TrimSpace(m)] + " " })
		s = re.xsStr.ReplaceAllString(s, "string(")
		s = re.xsNum.ReplaceAllString(s, "number(")
		s = re.xsBool.ReplaceAllString(s, "boolean(")
		if re.now.MatchString(s) {
			usesNow = true
			s = re.now.ReplaceAllString(s, nowMark)
		}
		out.WriteString(s)
	}
	// xs:dateTime("…") spans a literal: handled on the whole text.
	res := out.String()
	var bad error
	res = re.xsDate.ReplaceAllStringFunc(res, func(m string) string {
		lit := re.xsDate.FindStringSubmatch(m)[2]
		t, err := expr.ParseDateTime(lit[1 : len(lit)-1])
		if err != nil {
			bad = err
			return m
		}
		return strconv.FormatInt(t.Unix(), 10)
	})
	if bad != nil {
		return "", false, bad
	}
	// A comparison with a sequence of literals, X = ("a", "b"): any of them;
	// X != ("a", "b") (also written ne): none of them.
	res = re.seqCmp.ReplaceAllStringFunc(res, func(m string) string {
		sm := re.seqCmp.FindStringSubmatch(m)
		x, op := sm[1], sm[2]
		var parts []string
		for _, lit := range re.seqItem.FindAllString(sm[3], -1) {
			parts = append(parts, x+" "+op+" "+lit)
		}
		join := " or "
		if op == "!=" {
			join = " and "
		}
		return "(" + strings.Join(parts, join) + ")"
	})
	if strings.Contains(res, "xs:") {
		return "", false, fmt.Errorf("only xs:string, xs:boolean, the numeric casts and xs:dateTime are supported")
	}
	return res, usesNow, nil
}

type segment struct {
	text    string
	literal bool
}

func splitStrings(s string) []segment {
	var out []segment
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '"' && s[i] != '\'' {
			continue
		}
		q := s[i]
		j := strings.IndexByte(s[i+1:], q)
		if j < 0 {
			break
		}
		out = append(out, segment{s[start:i], false}, segment{s[i : i+j+2], true})
		i += j + 1
		start = i + 1
	}
	return append(out, segment{s[start:], false})
}

func indexOutsideStrings(s, what string) int {
	off := 0
	for _, seg := range splitStrings(s) {
		if !seg.literal {
			if i := strings.Index(seg.text, what); i >= 0 {
				return off + i
			}
		}
		off += len(seg.text)
	}
	return -1
}

// maxDoc bounds the process document an expression runs over.
const maxDoc = 1 << 20

// Eval evaluates the expression over the document built from the variables.
func (p *Program) Eval(e expr.Env) (any, error) {
	fail := func(msg string, err error) (any, error) {
		return nil, &expr.Error{Lang: expr.XPath, Source: p.src, Offset: -1, Msg: msg, Err: err}
	}
	if p.usesDoc {
		return fail(ErrDoc.Error(), ErrDoc)
	}
	doc, err := Document(e.Vars)
	if err != nil {
		return fail(err.Error(), nil)
	}
	if len(doc) > maxDoc {
		return fail(fmt.Sprintf("the process document is %d bytes, over %d", len(doc), maxDoc), expr.ErrCost)
	}
	root, err := xmlquery.Parse(strings.NewReader(doc))
	if err != nil {
		return fail(err.Error(), nil)
	}
	x := p.x
	if p.usesNow {
		now := e.Now
		if now.IsZero() {
			now = time.Now()
		}
		if x, err = xpath.CompileWithNS(p.withNow(now), p.ns); err != nil {
			return fail(err.Error(), nil)
		}
	}
	v, err := evaluate(x, root)
	if err != nil {
		return fail(err.Error(), nil)
	}
	return v, nil
}

func evaluate(x *xpath.Expr, root *xmlquery.Node) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	// The context node is wf:data: a relative path (amount > 10) reads a
	// variable; $wf:process/… and absolute paths read the whole document.
	nav := xmlquery.CreateXPathNavigator(root)
	if moveTo(nav, "process") {
		moveTo(nav, "data")
	}
	switch r := x.Evaluate(nav).(type) {
	case bool:
		return r, nil
	case float64:
		if r == float64(int64(r)) {
			return int64(r), nil
		}
		return r, nil
	case string:
		return r, nil
	case *xpath.NodeIterator:
		if r.MoveNext() {
			return r.Current().Value(), nil
		}
		return nil, nil
	default:
		return nil, fmt.Errorf("unexpected result %T", r)
	}
}

// moveTo moves the navigator to its child element of that local name.
func moveTo(nav *xmlquery.NodeNavigator, local string) bool {
	if !nav.MoveToChild() {
		return false
	}
	for {
		if nav.NodeType() == xpath.ElementNode && nav.LocalName() == local {
			return true
		}
		if !nav.MoveToNext() {
			nav.MoveToParent()
			return false
		}
	}
}

// Document writes the process document of the variables.
func Document(vars expr.Vars) (string, error) {
	var b strings.Builder
	b.WriteString(`<wf:process xmlns:wf="` + NS + `"><wf:data>`)
	if vars != nil {
		for _, name := range vars.Names() {
			if !validName(name) {
				continue // not an XML name: not reachable by a path
			}
			v, _ := vars.Get(name)
			writeValue(&b, name, expr.Normalize(v), 0)
			if b.Len() > maxDoc {
				return "", fmt.Errorf("the process data is over %d bytes", maxDoc)
			}
		}
	}
	b.WriteString(`</wf:data><wf:attachments>`)
	if wa, ok := vars.(WithAttachments); ok {
		for _, a := range wa.Attachments() {
			card := a.Cardinality
			if card == 0 {
				card = 1
			}
			fmt.Fprintf(&b, `<wf:attachment name="%s" uri="%s" cardinality="%d"/>`, escape(a.Name), escape(a.URI), card)
		}
	}
	b.WriteString(`</wf:attachments></wf:process>`)
	return b.String(), nil
}

// A variable named with the wf: prefix (wf:action) is an element of
// MarkLogic Workflow's namespace, as its models read them. The expression
// is compiled at its first use, like xpathREs.
var nameRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(wf:)?[A-Za-z_][\w.-]*$`)
})

func validName(s string) bool {
	return nameRe().MatchString(s) && !strings.HasPrefix(strings.ToLower(s), "xml")
}

func writeValue(b *strings.Builder, name string, v any, depth int) {
	if depth > 32 {
		return
	}
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			writeValue(b, name, e, depth+1)
		}
		return
	case map[string]any:
		b.WriteString("<" + name + ">")
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if validName(k) {
				writeValue(b, k, x[k], depth+1)
			}
		}
		b.WriteString("</" + name + ">")
		return
	}
	b.WriteString("<" + name + ">")
	switch x := v.(type) {
	case nil:
	case string:
		b.WriteString(escape(x))
	case time.Time:
		b.WriteString(x.UTC().Format(time.RFC3339Nano))
	case float64:
		b.WriteString(strconv.FormatFloat(x, 'f', -1, 64))
	default:
		b.WriteString(escape(fmt.Sprint(x)))
	}
	b.WriteString("</" + name + ">")
}

func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&quot;")
		default:
			if r < 0x20 && r != '\t' && r != '\n' && r != '\r' {
				continue
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}
