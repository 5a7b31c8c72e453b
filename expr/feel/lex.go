// Package feel evaluates FEEL, the expression language of DMN that
// Camunda 8 writes in BPMN models (conditions "= amount > 100", mappings,
// timers, assignments), in a sandbox: a budget of steps and a time limit
// per evaluation, no user-defined functions (so no recursion), no I/O.
//
// It covers what process models use: literals (numbers, strings,
// booleans, null, lists, contexts, @"…" temporal literals), names and
// paths (a.b), filters and indexes (list[item > 2], list[1]),
// arithmetic, comparison with null semantics, and/or/not with three-valued
// logic, between, in (lists, ranges, unary tests), if/then/else, for,
// some and every, and the built-in functions on strings, numbers, lists,
// contexts, dates, times and durations. A name that is not defined is
// null, as in Camunda 8; a condition that does not give a boolean is the
// caller's error.
package feel

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

type tokKind uint8

const (
	tEOF tokKind = iota
	tNum
	tStr
	tName
	tOp
	tTemporal // @"..."
)

type token struct {
	kind tokKind
	text string // the name, operator, number text or the decoded string
	off  int
}

type lexError struct {
	off int
	msg string
}

func (e *lexError) Error() string { return e.msg }

// lex splits src into tokens.
func lex(src string) ([]token, error) {
	var out []token
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, &lexError{i, "unterminated comment"}
			}
			i += end + 4
		case c >= '0' && c <= '9' || (c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9' && !(len(out) > 0 && out[len(out)-1].kind == tOp && out[len(out)-1].text == ".")):
			start := i
			for i < len(src) && src[i] >= '0' && src[i] <= '9' {
				i++
			}
			// "1..3" is a range, not 1. followed by .3
			if i < len(src) && src[i] == '.' && !(i+1 < len(src) && src[i+1] == '.') {
				i++
				for i < len(src) && src[i] >= '0' && src[i] <= '9' {
					i++
				}
			}
			if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
				j := i + 1
				if j < len(src) && (src[j] == '+' || src[j] == '-') {
					j++
				}
				if j < len(src) && src[j] >= '0' && src[j] <= '9' {
					i = j
					for i < len(src) && src[i] >= '0' && src[i] <= '9' {
						i++
					}
				}
			}
			out = append(out, token{tNum, src[start:i], start})
		case c == '"':
			s, n, err := readString(src, i)
			if err != nil {
				return nil, err
			}
			out = append(out, token{tStr, s, i})
			i += n
		case c == '@' && i+1 < len(src) && src[i+1] == '"':
			s, n, err := readString(src, i+1)
			if err != nil {
				return nil, err
			}
			out = append(out, token{tTemporal, s, i})
			i += n + 1
		case c == '`':
			end := strings.IndexByte(src[i+1:], '`')
			if end < 0 {
				return nil, &lexError{i, "unterminated `name`"}
			}
			out = append(out, token{tName, src[i+1 : i+1+end], i})
			i += end + 2
		case isNameStart(src, i):
			start := i
			for i < len(src) && isNamePart(src, i) {
				_, n := utf8.DecodeRuneInString(src[i:])
				i += n
			}
			out = append(out, token{tName, src[start:i], start})
		default:
			op := ""
			for _, o := range []string{"**", "!=", "<=", ">=", "..", "+", "-", "*", "/", "=", "<", ">", "(", ")", "[", "]", "{", "}", ",", ".", ":"} {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				r, _ := utf8.DecodeRuneInString(src[i:])
				return nil, &lexError{i, fmt.Sprintf("unexpected character %q", r)}
			}
			out = append(out, token{tOp, op, i})
			i += len(op)
		}
	}
	return append(out, token{tEOF, "", len(src)}), nil
}

func isNameStart(src string, i int) bool {
	r, _ := utf8.DecodeRuneInString(src[i:])
	return r == '_' || r == '?' || unicode.IsLetter(r)
}

func isNamePart(src string, i int) bool {
	r, _ := utf8.DecodeRuneInString(src[i:])
	return r == '_' || r == '?' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// readString reads a string literal starting at the quote at i; it
// returns the decoded text and the literal's length.
func readString(src string, i int) (string, int, error) {
	var b strings.Builder
	j := i + 1
	for j < len(src) {
		c := src[j]
		switch c {
		case '"':
			return b.String(), j + 1 - i, nil
		case '\\':
			if j+1 >= len(src) {
				return "", 0, &lexError{j, "unterminated string"}
			}
			j++
			switch src[j] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '"', '\\', '\'':
				b.WriteByte(src[j])
			case 'u':
				if j+4 >= len(src) {
					return "", 0, &lexError{j, "bad \\u escape"}
				}
				var r rune
				if _, err := fmt.Sscanf(src[j+1:j+5], "%04x", &r); err != nil {
					return "", 0, &lexError{j, "bad \\u escape"}
				}
				b.WriteRune(r)
				j += 4
			default:
				return "", 0, &lexError{j, fmt.Sprintf("unknown escape \\%c", src[j])}
			}
			j++
		default:
			b.WriteByte(c)
			j++
		}
	}
	return "", 0, &lexError{i, "unterminated string"}
}
