// Package ident checks names: a first character from one set of ASCII
// characters, then up to a bounded number from another. Veena's files and
// API take names, keys and event types of that form. A regular expression
// with a bounded repetition ({0,127}) compiles to a program of one step
// per repetition, tens of kilobytes that stay on the heap for the life of
// the program and that every garbage collection walks; a Pattern is two
// 128-entry tables.
package ident

// Pattern is a form of name: one character of its first set, then at most
// its maximum number of characters of its second set (see New).
type Pattern struct {
	first, rest [128]bool
	max         int
}

// New makes a pattern from two character sets written as in a regular
// expression's brackets, without them: single characters and ranges
// ("A-Za-z0-9_"); a '-' first or last stands for itself.
func New(first, rest string, max int) Pattern {
	var p Pattern
	set(&p.first, first)
	set(&p.rest, rest)
	p.max = max
	return p
}

func set(t *[128]bool, spec string) {
	for i := 0; i < len(spec); i++ {
		c := spec[i]
		if i+2 < len(spec) && spec[i+1] == '-' {
			for x := c; x <= spec[i+2]; x++ {
				t[x] = true
			}
			i += 2
			continue
		}
		t[c] = true
	}
}

// Match reports whether s has the pattern's form.
func (p *Pattern) Match(s string) bool {
	if len(s) == 0 || len(s)-1 > p.max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 128 {
			return false
		}
		if i == 0 && !p.first[c] || i > 0 && !p.rest[c] {
			return false
		}
	}
	return true
}
