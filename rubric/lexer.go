package rubric

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

type tokKind uint8

const (
	tEOF    tokKind = iota + 1
	tWord           // an identifier or keyword
	tNumber         // '-'? DIGIT+
	tString         // text holds the value, unescaped
	tLParen
	tRParen
	tAt
)

type token struct {
	kind tokKind
	pos  pos
	text string // tWord: as written; tString: the value; tNumber: as written
	num  int64  // tNumber
	big  bool   // tNumber: does not fit in 64 bits
}

// describe names the token for error messages.
func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tWord:
		if reserved(t.text) {
			return fmt.Sprintf("keyword %q", t.text)
		}
		return fmt.Sprintf("%q", t.text)
	case tNumber:
		return "number " + t.text
	case tString:
		return "a string"
	case tLParen:
		return `"("`
	case tRParen:
		return `")"`
	case tAt:
		return `"@"`
	}
	return "?"
}

type lexer struct {
	src  string
	off  int
	line int
	col  int // column of src[off], from 1, in characters
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

func (l *lexer) here() pos { return pos{off: l.off, line: l.line, col: l.col} }

// advance moves past n bytes that hold no newline and are all ASCII.
func (l *lexer) advance(n int) {
	l.off += n
	l.col += n
}

// advanceText moves past s = src[off:off+len(s)], which may hold newlines
// and multi-byte characters.
func (l *lexer) advanceText(s string) {
	for len(s) > 0 {
		if s[0] == '\n' {
			l.line++
			l.col = 1
			l.off++
			s = s[1:]
			continue
		}
		_, w := utf8.DecodeRuneInString(s)
		l.off += w
		l.col++
		s = s[w:]
	}
}

func errAt(p pos, format string, args ...any) *CompileError {
	return &CompileError{Offset: p.off, Line: p.line, Column: p.col, Msg: fmt.Sprintf(format, args...)}
}

// tokens splits src into tokens, ending with tEOF.
func tokenize(src string) ([]token, error) {
	l := &lexer{src: src, line: 1, col: 1}
	var toks []token
	for {
		if err := l.skipSpace(); err != nil {
			return nil, err
		}
		start := l.here()
		if l.off >= len(src) {
			return append(toks, token{kind: tEOF, pos: start}), nil
		}
		c := src[l.off]
		switch {
		case c == '(':
			l.advance(1)
			toks = append(toks, token{kind: tLParen, pos: start})
		case c == ')':
			l.advance(1)
			toks = append(toks, token{kind: tRParen, pos: start})
		case c == '@':
			l.advance(1)
			toks = append(toks, token{kind: tAt, pos: start})
		case c == '"':
			t, err := l.str()
			if err != nil {
				return nil, err
			}
			toks = append(toks, t)
		case isDigit(c) || c == '-':
			t, err := l.number()
			if err != nil {
				return nil, err
			}
			toks = append(toks, t)
		case isLetter(c):
			end := l.off + 1
			for end < len(src) && (isLetter(src[end]) || isDigit(src[end]) || src[end] == '.' || src[end] == '_') {
				end++
			}
			t := token{kind: tWord, pos: start, text: src[l.off:end]}
			l.advance(end - l.off)
			toks = append(toks, t)
		default:
			r, _ := utf8.DecodeRuneInString(src[l.off:])
			if r == utf8.RuneError {
				return nil, errAt(start, "invalid UTF-8")
			}
			return nil, errAt(start, "unexpected character %q", r)
		}
	}
}

// skipSpace skips whitespace and comments.
func (l *lexer) skipSpace() error {
	for l.off < len(l.src) {
		switch c := l.src[l.off]; {
		case c == '\n':
			l.off++
			l.line++
			l.col = 1
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			l.advance(1)
		case strings.HasPrefix(l.src[l.off:], "//"):
			end := strings.IndexByte(l.src[l.off:], '\n')
			if end < 0 {
				end = len(l.src) - l.off
			}
			l.advanceText(l.src[l.off : l.off+end])
		case strings.HasPrefix(l.src[l.off:], "/*"):
			start := l.here()
			end := strings.Index(l.src[l.off+2:], "*/")
			if end < 0 {
				return errAt(start, "unterminated comment")
			}
			l.advanceText(l.src[l.off : l.off+2+end+2])
		default:
			return nil
		}
	}
	return nil
}

// str reads a string literal. Inside it, \" is a quote and every other
// character stands for itself. So a value never ends in a backslash: a
// backslash before the closing quote would have escaped it.
func (l *lexer) str() (token, error) {
	start := l.here()
	var b strings.Builder
	i := l.off + 1
	for {
		if i >= len(l.src) {
			return token{}, errAt(start, "unterminated string")
		}
		c := l.src[i]
		if c == '"' {
			break
		}
		if c == '\\' && i+1 < len(l.src) && l.src[i+1] == '"' {
			b.WriteByte('"')
			i += 2
			continue
		}
		b.WriteByte(c)
		i++
	}
	text := l.src[l.off : i+1]
	if !utf8.ValidString(text) {
		return token{}, errAt(start, "invalid UTF-8 in string")
	}
	l.advanceText(text)
	return token{kind: tString, pos: start, text: b.String()}, nil
}

func (l *lexer) number() (token, error) {
	start := l.here()
	i := l.off
	neg := l.src[i] == '-'
	if neg {
		i++
		if i >= len(l.src) || !isDigit(l.src[i]) {
			return token{}, errAt(start, `"-" must be followed by a digit`)
		}
	}
	t := token{kind: tNumber, pos: start}
	var n uint64
	for ; i < len(l.src) && isDigit(l.src[i]); i++ {
		d := uint64(l.src[i] - '0')
		if n > (math.MaxUint64-d)/10 {
			t.big = true
		} else {
			n = n*10 + d
		}
	}
	switch {
	case t.big:
	case neg && n <= -math.MinInt64:
		t.num = -int64(n-1) - 1
	case !neg && n <= math.MaxInt64:
		t.num = int64(n)
	default:
		t.big = true
	}
	t.text = l.src[l.off:i]
	l.advance(i - l.off)
	return t, nil
}
