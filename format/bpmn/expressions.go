package bpmn

import (
	"errors"
	"strings"

	"github.com/veena-wf/veena/expr"
	"github.com/veena-wf/veena/expr/celexpr"
	"github.com/veena-wf/veena/expr/feel"
	"github.com/veena-wf/veena/expr/uel"
	"github.com/veena-wf/veena/expr/xpath"
	"github.com/veena-wf/veena/graph"
)

// What an expression is for decides how text without a language marker is
// read.
type exprPurpose uint8

const (
	// A condition: text is always an expression, in the file's language.
	exprCondition exprPurpose = iota
	// A value (mapping source, assignee, job type, key): static text
	// unless it starts with "=" (FEEL) or holds ${…} (UEL).
	exprValue
	// A timer: an ISO 8601 or cron text unless "=" or ${…}.
	exprTimer
	// A variable name (a multi-instance collection): a name, or an expression.
	exprName
)

// languageOf maps a language URI or name onto a language.
func languageOf(uri string) (expr.Language, bool) {
	u := strings.ToLower(strings.TrimSpace(uri))
	switch {
	case u == "":
		return "", false
	case strings.Contains(u, "feel"):
		return expr.FEEL, true
	case strings.Contains(u, "xpath"), strings.Contains(u, "xquery"):
		return expr.XPath, true
	case u == "cel", strings.Contains(u, "cel.dev"), strings.Contains(u, "common-expression-language"):
		return expr.CEL, true
	case strings.Contains(u, "juel"), strings.Contains(u, "java.com"), u == "uel", strings.Contains(u, "/el"):
		return expr.UEL, true
	case strings.Contains(u, "javascript"), strings.Contains(u, "ecmascript"):
		return expr.JavaScript, true
	}
	return expr.Language(u), false
}

// expression compiles the text of an expression of element e (nil when the
// text comes from elsewhere; the caller sets Pos). lang is the language
// attribute, if any.
func (p *parser) expression(e *elem, text, lang string, purpose exprPurpose) *Expr {
	pos := graph.Pos{}
	if e != nil {
		pos = e.Pos
		if e.TextPos.Line > 0 && strings.TrimSpace(e.Text) == strings.TrimSpace(text) {
			pos = e.TextPos
		}
	}
	trimmed := strings.TrimSpace(text)
	x := &Expr{Text: trimmed, Pos: pos}
	var l expr.Language
	src := trimmed
	switch {
	case strings.HasPrefix(trimmed, "="):
		l, src = expr.FEEL, strings.TrimSpace(trimmed[1:])
	case lang != "":
		known := false
		l, known = languageOf(lang)
		if !known {
			p.add(pos, "expression language %q is not supported (FEEL, UEL, CEL or XPath)", lang)
			return nil
		}
	case uel.IsUEL(trimmed):
		l = expr.UEL
	case purpose == exprValue || purpose == exprTimer:
		return x // static
	case purpose == exprName:
		if isName(trimmed) {
			l = expr.FEEL
			break
		}
		fallthrough
	default:
		dl, known := languageOf(p.defaultLang)
		switch {
		case p.defaultLang != "" && known:
			l = dl
		case p.defaultLang != "":
			p.add(pos, "expression language %q of the definitions is not supported (FEEL, UEL, CEL or XPath)", p.defaultLang)
			return nil
		case p.zeebe:
			l = expr.FEEL // Camunda 8 files
		default:
			l = expr.XPath // the BPMN default
		}
	}
	if src == "" {
		p.add(pos, "empty %s expression", l)
		return nil
	}
	var prog expr.Program
	var err error
	switch l {
	case expr.FEEL:
		prog, err = compileFEEL(src)
	case expr.UEL:
		prog, err = compileUEL(src)
	case expr.CEL:
		prog, err = compileCEL(src)
	case expr.XPath:
		var ns map[string]string
		if e != nil {
			ns = e.NS
		}
		if purpose == exprCondition {
			// A condition is the expression's effective boolean value (a
			// node-set is true when it is not empty), as MarkLogic reads it.
			prog, err = compileXPathCondition(src, ns)
		} else {
			prog, err = compileXPath(src, ns)
		}
	case expr.JavaScript:
		p.add(pos, "JavaScript expressions are only run by script tasks; write conditions in FEEL, UEL, CEL or XPath")
		return nil
	}
	if err != nil {
		p.exprError(pos, trimmed, src, err)
		return nil
	}
	if xp, ok := prog.(*xpath.Program); ok && xp.UsesDoc() {
		p.warn(pos, "%s: %v; evaluating it opens an incident", clip(trimmed), xpath.ErrDoc)
	}
	x.Lang, x.Program = l, prog
	return x
}

// These wrappers keep typed nil programs out of the interface.
func compileFEEL(s string) (expr.Program, error) {
	p, err := feel.Compile(s)
	if err != nil {
		return nil, err
	}
	return p, nil
}

func compileUEL(s string) (expr.Program, error) {
	p, err := uel.Compile(s)
	if err != nil {
		return nil, err
	}
	return p, nil
}

func compileCEL(s string) (expr.Program, error) {
	p, err := celexpr.Compile(s)
	if err != nil {
		return nil, err
	}
	return p, nil
}

func compileXPathCondition(s string, ns map[string]string) (expr.Program, error) {
	p, err := xpath.CompileCondition(s, ns)
	if err != nil {
		return nil, err
	}
	return p, nil
}

func compileXPath(s string, ns map[string]string) (expr.Program, error) {
	p, err := xpath.Compile(s, ns)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// exprError reports a compile error at the position of the problem within
// the expression's text.
func (p *parser) exprError(pos graph.Pos, text, src string, err error) {
	var ee *expr.Error
	if errors.As(err, &ee) && ee.Offset >= 0 && pos.Line > 0 {
		// src is text with a leading "=" and spaces removed.
		start := strings.Index(text, src)
		if start < 0 {
			start = 0
		}
		pos = advance(pos, text[:min(len(text), start+ee.Offset)])
		p.add(pos, "%s expression %q: %s", ee.Lang, clip(text), ee.Msg)
		return
	}
	p.add(pos, "%v", err)
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// advance moves a position over text.
func advance(pos graph.Pos, text string) graph.Pos {
	for _, c := range text {
		if c == '\n' {
			pos.Line++
			pos.Column = 1
		} else {
			pos.Column++
		}
	}
	return pos
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c >= '0' && c <= '9' || c == '.')) {
			return false
		}
	}
	return true
}
