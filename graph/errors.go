package graph

import (
	"fmt"
	"strings"
)

// Pos is a position in a definition file (1-based; 0 when unknown).
type Pos struct{ Line, Column int }

// Problem is one thing wrong with a definition, where it is.
type Problem struct {
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
}

// LoadError is a definition that could not be loaded: the file and every
// problem found in it.
type LoadError struct {
	File     string
	Problems []Problem
}

func (e *LoadError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("\n")
		}
		name := e.File
		if name == "" {
			name = "definition"
		}
		if p.Line > 0 {
			fmt.Fprintf(&b, "%s:%d:%d: %s", name, p.Line, p.Column, p.Message)
		} else {
			fmt.Fprintf(&b, "%s: %s", name, p.Message)
		}
	}
	if len(e.Problems) == 0 {
		return e.File + ": invalid definition"
	}
	return b.String()
}

// Add records a problem at pos.
func (e *LoadError) Add(pos Pos, format string, args ...any) {
	e.Problems = append(e.Problems, Problem{Line: pos.Line, Column: pos.Column, Message: fmt.Sprintf(format, args...)})
}

// OrNil returns e if it holds any problem, else nil.
func (e *LoadError) OrNil() error {
	if e == nil || len(e.Problems) == 0 {
		return nil
	}
	return e
}

// PosError is an error at a known place in a definition file, for code
// that checks a part of a definition (a node type reading its <custom>
// element) and knows better than the node where the problem is.
type PosError struct {
	Pos Pos
	Err error
}

func (e *PosError) Error() string { return e.Err.Error() }

func (e *PosError) Unwrap() error { return e.Err }

// ErrorAt returns err placed at pos (err itself if pos is unknown).
func ErrorAt(pos Pos, err error) error {
	if err == nil || pos.Line == 0 {
		return err
	}
	return &PosError{Pos: pos, Err: err}
}
