package joinlang

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

type tokenKind int

const (
	tokEOF tokenKind = iota
	tokError
	tokIdent
	tokKeyword
	tokString
	tokNumber
	tokLParen
	tokRParen
)

// token is one lexical token. For a keyword, kw is its lowercase spelling and
// text the spelling in the source; for a string, text is the unescaped value;
// for a number, text is the literal; for an error, text is the message.
type token struct {
	kind tokenKind
	kw   string
	text string
	pos  Pos
}

// keywords are JoinLang's reserved words, matched case-insensitively.
var keywords = map[string]bool{
	"require":  true,
	"node":     true,
	"tokenset": true,
	"all":      true,
	"arcs":     true,
	"at":       true,
	"least":    true,
	"labelled": true,
	"default":  true,
	"when":     true,
	"or":       true,
	"and":      true,
	"not":      true,
}

// keywordOf returns the lowercase keyword an identifier-shaped word spells,
// or "" if it is not a keyword.
func keywordOf(word string) string {
	if len(word) > len("labelled") {
		return ""
	}
	lw := strings.ToLower(word) // words are ASCII here
	if keywords[lw] {
		return lw
	}
	return ""
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of input"
	case tokIdent:
		return fmt.Sprintf("identifier %q", t.text)
	case tokKeyword:
		return fmt.Sprintf("keyword %q", t.text)
	case tokString:
		return fmt.Sprintf("string %q", t.text)
	case tokNumber:
		return "number " + t.text
	case tokLParen:
		return `"("`
	case tokRParen:
		return `")"`
	}
	return t.text
}

type lexer struct {
	src  string
	off  int
	line int
	col  int
}

func (l *lexer) pos() Pos { return Pos{Offset: l.off, Line: l.line, Column: l.col} }

// advance moves n bytes forward, keeping line and column up to date.
func (l *lexer) advance(n int) {
	end := l.off + n
	for l.off < end {
		r, size := utf8.DecodeRuneInString(l.src[l.off:])
		l.off += size
		if r == '\n' {
			l.line++
			l.col = 1
		} else {
			l.col++
		}
	}
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// tokenize lexes the whole source. The result ends with a tokEOF token, or
// with a tokError token at the first lexical error.
func tokenize(src string) []token {
	l := &lexer{src: src, line: 1, col: 1}
	var toks []token
	for {
		t := l.next()
		toks = append(toks, t)
		if t.kind == tokEOF || t.kind == tokError {
			return toks
		}
	}
}

func (l *lexer) errorf(p Pos, format string, args ...any) token {
	return token{kind: tokError, text: fmt.Sprintf(format, args...), pos: p}
}

func (l *lexer) next() token {
	if t, ok := l.skipSpace(); !ok {
		return t
	}
	start := l.pos()
	if l.off >= len(l.src) {
		return token{kind: tokEOF, pos: start}
	}
	c := l.src[l.off]
	switch {
	case isLetter(c):
		end := l.off + 1
		for end < len(l.src) {
			d := l.src[end]
			if !isLetter(d) && !isDigit(d) && d != '.' && d != '_' {
				break
			}
			end++
		}
		word := l.src[l.off:end]
		l.advance(end - l.off)
		if kw := keywordOf(word); kw != "" {
			return token{kind: tokKeyword, kw: kw, text: word, pos: start}
		}
		return token{kind: tokIdent, text: word, pos: start}
	case isDigit(c) || c == '-' && l.off+1 < len(l.src) && isDigit(l.src[l.off+1]):
		// A sign and leading zeros are lexed so that the parser can say
		// why the number is not a valid arc count.
		end := l.off + 1
		for end < len(l.src) && isDigit(l.src[end]) {
			end++
		}
		lit := l.src[l.off:end]
		l.advance(end - l.off)
		return token{kind: tokNumber, text: lit, pos: start}
	case c == '"':
		return l.lexString(start)
	case c == '(':
		l.advance(1)
		return token{kind: tokLParen, text: "(", pos: start}
	case c == ')':
		l.advance(1)
		return token{kind: tokRParen, text: ")", pos: start}
	}
	r, size := utf8.DecodeRuneInString(l.src[l.off:])
	if r == utf8.RuneError && size <= 1 {
		return l.errorf(start, "invalid UTF-8 byte 0x%02x", c)
	}
	return l.errorf(start, "unexpected character %q", r)
}

// skipSpace skips whitespace and comments. It reports false, with an error
// token, for an unterminated block comment.
func (l *lexer) skipSpace() (token, bool) {
	for l.off < len(l.src) {
		switch c := l.src[l.off]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			l.advance(1)
		case strings.HasPrefix(l.src[l.off:], "//"):
			n := strings.IndexByte(l.src[l.off:], '\n')
			if n < 0 {
				n = len(l.src) - l.off
			}
			l.advance(n)
		case strings.HasPrefix(l.src[l.off:], "/*"):
			start := l.pos()
			n := strings.Index(l.src[l.off+2:], "*/")
			if n < 0 {
				return l.errorf(start, "unterminated comment: missing */"), false
			}
			l.advance(n + 4)
		default:
			return token{}, true
		}
	}
	return token{}, true
}

// lexString lexes a string literal. Inside it, \" stands for a quote; every
// other character, a backslash or a newline included, stands for itself.
func (l *lexer) lexString(start Pos) token {
	var b strings.Builder
	i := l.off + 1
	for i < len(l.src) {
		c := l.src[i]
		switch {
		case c == '\\' && i+1 < len(l.src) && l.src[i+1] == '"':
			b.WriteByte('"')
			i += 2
		case c == '"':
			l.advance(i + 1 - l.off)
			return token{kind: tokString, text: b.String(), pos: start}
		default:
			b.WriteByte(c)
			i++
		}
	}
	return l.errorf(start, "unterminated string: missing closing quote")
}
