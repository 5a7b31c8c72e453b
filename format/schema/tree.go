package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/veena-wf/veena/graph"
)

// Limits on what a schema file may hold, so that a hostile file cannot
// make loading slow or large.
const (
	// MaxFileSize is the largest schema file accepted, in bytes.
	MaxFileSize = 4 << 20
	// MaxYAMLSize is the largest schema file accepted in YAML: the YAML
	// parser's time grows faster than the file (about 1 s for 256 KiB,
	// 6 s for 512 KiB), so larger schemas are written in JSON.
	MaxYAMLSize = 256 << 10
	// maxDepth is the deepest nesting of objects and lists in a file.
	maxDepth = 64
	// maxValues is the most values (scalars, objects and lists) in a file.
	maxValues = 200000
)

// kind is the type of a value in a schema file.
type kind uint8

const (
	kNull kind = iota
	kString
	kNumber
	kBool
	kObject
	kList
)

var kindNames = [...]string{"null", "string", "number", "boolean", "object", "list"}

func (k kind) String() string { return kindNames[k] }

// value is one value of a schema file with where it stands: JSON and YAML
// files are both read into this tree, so that the rest of the importer
// reads one shape and every message can give a line and column.
type value struct {
	kind kind
	pos  graph.Pos
	str  string // a string, or a number's literal text
	b    bool
	keys []entry // an object's members, in file order
	list []*value
}

// entry is one member of an object.
type entry struct {
	key    string
	keyPos graph.Pos
	val    *value
}

// get returns the member named key of an object, or nil.
func (v *value) get(key string) *value {
	if v == nil || v.kind != kObject {
		return nil
	}
	for _, e := range v.keys {
		if e.key == key {
			return e.val
		}
	}
	return nil
}

// plain converts a value into plain Go data: string, json.Number, bool,
// nil, map[string]any and []any.
func (v *value) plain() any {
	switch v.kind {
	case kString:
		return v.str
	case kNumber:
		return json.Number(v.str)
	case kBool:
		return v.b
	case kObject:
		m := make(map[string]any, len(v.keys))
		for _, e := range v.keys {
			m[e.key] = e.val.plain()
		}
		return m
	case kList:
		l := make([]any, len(v.list))
		for i, x := range v.list {
			l[i] = x.plain()
		}
		return l
	}
	return nil
}

// describe names a value's kind for messages.
func (v *value) describe() string {
	if v == nil {
		return "nothing"
	}
	return v.kind.String()
}

// parseTree reads a schema file, JSON or YAML (sniffed: a file whose first
// non-blank character is '{' is JSON), into a value tree. Problems carry
// line and column.
func parseTree(file string, src []byte) (*value, error) {
	lerr := &graph.LoadError{File: file}
	if len(src) > MaxFileSize {
		lerr.Add(graph.Pos{}, "the file is %d bytes; a schema may have at most %d", len(src), MaxFileSize)
		return nil, lerr
	}
	if !utf8.Valid(src) {
		lerr.Add(posAt(src, firstInvalidUTF8(src)), "the file is not valid UTF-8")
		return nil, lerr
	}
	if IsJSON(src) {
		return parseJSON(file, src)
	}
	if len(src) > MaxYAMLSize {
		lerr.Add(graph.Pos{}, "the file is %d bytes of YAML; a schema in YAML may have at most %d (write larger ones in JSON)", len(src), MaxYAMLSize)
		return nil, lerr
	}
	return parseYAML(file, src)
}

// IsJSON reports whether a schema file is written in JSON (its first
// non-blank character is '{'); otherwise it is read as YAML.
func IsJSON(src []byte) bool {
	t := bytes.TrimLeft(src, " \t\r\n\ufeff")
	t = bytes.TrimPrefix(t, []byte("\xef\xbb\xbf"))
	t = bytes.TrimLeft(t, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// posAt converts a byte offset into a 1-based line and column (columns
// count characters).
func posAt(src []byte, off int) graph.Pos {
	if off > len(src) {
		off = len(src)
	}
	line := 1 + bytes.Count(src[:off], []byte("\n"))
	start := bytes.LastIndexByte(src[:off], '\n') + 1
	return graph.Pos{Line: line, Column: 1 + utf8.RuneCount(src[start:off])}
}

// ---- JSON

// jsonReader builds the tree from encoding/json's tokens, using the
// decoder's offsets for positions.
type jsonReader struct {
	src   []byte
	dec   *json.Decoder
	count int
	// where is the last position computed; offsets only grow while
	// reading, so each position is found from the last one, in time linear
	// in the file.
	whereOff int
	where    graph.Pos
}

// pos converts a byte offset into a line and column, from the last one
// computed when off lies after it.
func (r *jsonReader) pos(off int) graph.Pos {
	if off > len(r.src) {
		off = len(r.src)
	}
	if off < r.whereOff || r.where.Line == 0 {
		r.whereOff, r.where = 0, graph.Pos{Line: 1, Column: 1}
	}
	seg := r.src[r.whereOff:off]
	if nl := bytes.LastIndexByte(seg, '\n'); nl >= 0 {
		r.where.Line += bytes.Count(seg, []byte("\n"))
		r.where.Column = 1 + utf8.RuneCount(seg[nl+1:])
	} else {
		r.where.Column += utf8.RuneCount(seg)
	}
	r.whereOff = off
	return r.where
}

func parseJSON(file string, src []byte) (*value, error) {
	r := &jsonReader{src: src, dec: json.NewDecoder(bytes.NewReader(src))}
	r.dec.UseNumber()
	v, err := r.value(0)
	if err == nil {
		if _, terr := r.dec.Token(); terr != io.EOF {
			err = r.fail(r.skipSpace(int(r.dec.InputOffset())), "unexpected content after the schema object")
		}
	}
	if err != nil {
		lerr := &graph.LoadError{File: file}
		var pe *posError
		if errors.As(err, &pe) {
			lerr.Add(pe.pos, "%s", pe.msg)
		} else {
			lerr.Add(graph.Pos{}, "%v", err)
		}
		return nil, lerr
	}
	return v, nil
}

type posError struct {
	pos graph.Pos
	msg string
}

func (e *posError) Error() string { return fmt.Sprintf("%d:%d: %s", e.pos.Line, e.pos.Column, e.msg) }

func (r *jsonReader) fail(off int, format string, args ...any) error {
	return &posError{pos: posAt(r.src, off), msg: fmt.Sprintf(format, args...)}
}

// skipSpace returns the offset of the first non-blank byte at or after off.
func (r *jsonReader) skipSpace(off int) int {
	for off < len(r.src) {
		switch r.src[off] {
		case ' ', '\t', '\r', '\n':
			off++
			continue
		case ':', ',':
			off++
			continue
		}
		break
	}
	return off
}

// token reads the next token and the offset it starts at.
func (r *jsonReader) token() (json.Token, int, error) {
	off := r.skipSpace(int(r.dec.InputOffset()))
	t, err := r.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, 0, r.fail(int(se.Offset), "JSON syntax: %s", strings.TrimPrefix(se.Error(), "invalid character "))
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, 0, r.fail(len(r.src), "the JSON ends too early")
		}
		return nil, 0, r.fail(off, "JSON: %v", err)
	}
	return t, off, nil
}

func (r *jsonReader) value(depth int) (*value, error) {
	t, off, err := r.token()
	if err != nil {
		return nil, err
	}
	return r.from(t, off, depth)
}

func (r *jsonReader) from(t json.Token, off, depth int) (*value, error) {
	r.count++
	if r.count > maxValues {
		return nil, r.fail(off, "the file holds more than %d values", maxValues)
	}
	if depth > maxDepth {
		return nil, r.fail(off, "objects and lists are nested more than %d deep", maxDepth)
	}
	pos := r.pos(off)
	switch x := t.(type) {
	case nil:
		return &value{kind: kNull, pos: pos}, nil
	case string:
		return &value{kind: kString, pos: pos, str: x}, nil
	case json.Number:
		return &value{kind: kNumber, pos: pos, str: string(x)}, nil
	case bool:
		return &value{kind: kBool, pos: pos, b: x}, nil
	case json.Delim:
		switch x {
		case '{':
			v := &value{kind: kObject, pos: pos}
			seen := map[string]bool{}
			for r.dec.More() {
				kt, koff, err := r.token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, r.fail(koff, "an object key must be a string")
				}
				if seen[key] {
					return nil, r.fail(koff, "key %q appears twice in this object", key)
				}
				seen[key] = true
				kpos := r.pos(koff)
				val, err := r.value(depth + 1)
				if err != nil {
					return nil, err
				}
				v.keys = append(v.keys, entry{key: key, keyPos: kpos, val: val})
			}
			if _, _, err := r.token(); err != nil { // '}'
				return nil, err
			}
			return v, nil
		case '[':
			v := &value{kind: kList, pos: pos}
			for r.dec.More() {
				val, err := r.value(depth + 1)
				if err != nil {
					return nil, err
				}
				v.list = append(v.list, val)
			}
			if _, _, err := r.token(); err != nil { // ']'
				return nil, err
			}
			return v, nil
		}
	}
	return nil, r.fail(off, "unexpected JSON token %v", t)
}

// ---- YAML

// yamlReader builds the tree from goccy/go-yaml's syntax tree, which keeps
// every node's line and column. Aliases are refused: a file of a few
// hundred bytes could otherwise expand into gigabytes.
type yamlReader struct {
	lerr  *graph.LoadError
	count int
}

func parseYAML(file string, src []byte) (_ *value, err error) {
	lerr := &graph.LoadError{File: file}
	defer func() {
		// The YAML parser is third-party code reading hostile input.
		if r := recover(); r != nil {
			lerr.Problems = nil
			lerr.Add(graph.Pos{}, "YAML: the parser failed on this file (%v)", r)
			err = lerr
		}
	}()
	f, perr := parser.ParseBytes(src, 0)
	if perr != nil {
		pos, msg := yamlErrorPos(perr)
		lerr.Add(pos, "YAML syntax: %s", msg)
		return nil, lerr
	}
	var docs []*ast.DocumentNode
	for _, d := range f.Docs {
		if d != nil && d.Body != nil {
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		lerr.Add(graph.Pos{Line: 1, Column: 1}, "the file is empty: a schema is an object with at least \"schema\" and \"nodes\"")
		return nil, lerr
	}
	if len(docs) > 1 {
		lerr.Add(posOf(docs[1].Body), "the file holds %d YAML documents; a schema file holds one", len(docs))
		return nil, lerr
	}
	r := &yamlReader{lerr: lerr}
	v := r.node(docs[0].Body, 0)
	if err := lerr.OrNil(); err != nil {
		return nil, err
	}
	return v, nil
}

// yamlErrorPos finds the position in a go-yaml error.
func yamlErrorPos(err error) (graph.Pos, string) {
	var se interface {
		GetToken() *token.Token
		GetMessage() string
	}
	if errors.As(err, &se) {
		if tk := se.GetToken(); tk != nil && tk.Position != nil {
			return graph.Pos{Line: tk.Position.Line, Column: tk.Position.Column}, se.GetMessage()
		}
		return graph.Pos{}, se.GetMessage()
	}
	return graph.Pos{}, err.Error()
}

func posOf(n ast.Node) graph.Pos {
	if n == nil {
		return graph.Pos{}
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil {
		return graph.Pos{}
	}
	return graph.Pos{Line: tk.Position.Line, Column: tk.Position.Column}
}

func (r *yamlReader) node(n ast.Node, depth int) *value {
	pos := posOf(n)
	r.count++
	if r.count > maxValues {
		if r.count == maxValues+1 {
			r.lerr.Add(pos, "the file holds more than %d values", maxValues)
		}
		return &value{kind: kNull, pos: pos}
	}
	if depth > maxDepth {
		r.lerr.Add(pos, "objects and lists are nested more than %d deep", maxDepth)
		return &value{kind: kNull, pos: pos}
	}
	switch x := n.(type) {
	case nil:
		return &value{kind: kNull, pos: pos}
	case *ast.NullNode:
		return &value{kind: kNull, pos: pos}
	case *ast.StringNode:
		return &value{kind: kString, pos: pos, str: x.Value}
	case *ast.LiteralNode:
		s := ""
		if x.Value != nil {
			s = x.Value.Value
		}
		return &value{kind: kString, pos: pos, str: s}
	case *ast.BoolNode:
		return &value{kind: kBool, pos: pos, b: x.Value}
	case *ast.IntegerNode:
		return r.number(pos, x.GetToken().Value, x.Value)
	case *ast.FloatNode:
		if math.IsInf(x.Value, 0) || math.IsNaN(x.Value) {
			r.lerr.Add(pos, "%s is not a number a schema can hold", x.GetToken().Value)
			return &value{kind: kNull, pos: pos}
		}
		return &value{kind: kNumber, pos: pos, str: strconv.FormatFloat(x.Value, 'g', -1, 64)}
	case *ast.InfinityNode, *ast.NanNode:
		r.lerr.Add(pos, "%s is not a number a schema can hold", n.GetToken().Value)
		return &value{kind: kNull, pos: pos}
	case *ast.TagNode:
		r.lerr.Add(pos, "YAML tags (%s) are not supported in a schema", x.Start.Value)
		return &value{kind: kNull, pos: pos}
	case *ast.AnchorNode:
		return r.node(x.Value, depth)
	case *ast.AliasNode:
		r.lerr.Add(pos, "YAML aliases (*%s) are not supported in a schema", aliasName(x))
		return &value{kind: kNull, pos: pos}
	case *ast.MappingNode:
		return r.mapping(pos, x.Values, depth)
	case *ast.MappingValueNode:
		return r.mapping(pos, []*ast.MappingValueNode{x}, depth)
	case *ast.SequenceNode:
		v := &value{kind: kList, pos: pos}
		for _, item := range x.Values {
			v.list = append(v.list, r.node(item, depth+1))
		}
		return v
	case *ast.CommentNode:
		return &value{kind: kNull, pos: pos}
	case *ast.DocumentNode:
		return r.node(x.Body, depth)
	}
	r.lerr.Add(pos, "unsupported YAML construct %s", n.Type())
	return &value{kind: kNull, pos: pos}
}

func aliasName(a *ast.AliasNode) string {
	if a.Value == nil {
		return ""
	}
	return a.Value.String()
}

func (r *yamlReader) number(pos graph.Pos, text string, v any) *value {
	switch x := v.(type) {
	case int64:
		return &value{kind: kNumber, pos: pos, str: strconv.FormatInt(x, 10)}
	case uint64:
		if x > math.MaxInt64 {
			r.lerr.Add(pos, "integer %s is too large (at most %d)", text, int64(math.MaxInt64))
			return &value{kind: kNull, pos: pos}
		}
		return &value{kind: kNumber, pos: pos, str: strconv.FormatUint(x, 10)}
	case int:
		return &value{kind: kNumber, pos: pos, str: strconv.Itoa(x)}
	}
	r.lerr.Add(pos, "integer %s is out of range", text)
	return &value{kind: kNull, pos: pos}
}

func (r *yamlReader) mapping(pos graph.Pos, items []*ast.MappingValueNode, depth int) *value {
	v := &value{kind: kObject, pos: pos}
	seen := map[string]bool{}
	for _, mv := range items {
		if mv == nil {
			continue
		}
		kpos := posOf(mv.Key)
		if mv.Key == nil {
			r.lerr.Add(kpos, "an object member without a key")
			continue
		}
		if _, merge := mv.Key.(*ast.MergeKeyNode); merge {
			r.lerr.Add(kpos, "YAML merge keys (<<) are not supported in a schema")
			continue
		}
		var key string
		switch k := mv.Key.(type) {
		case *ast.StringNode:
			key = k.Value
		case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NullNode:
			key = k.GetToken().Value
		default:
			r.lerr.Add(kpos, "an object key must be a plain string, not %s", mv.Key.Type())
			continue
		}
		if seen[key] {
			r.lerr.Add(kpos, "key %q appears twice in this object", key)
			continue
		}
		seen[key] = true
		v.keys = append(v.keys, entry{key: key, keyPos: kpos, val: r.node(mv.Value, depth+1)})
	}
	return v
}
