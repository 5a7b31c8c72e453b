package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Kind is the type of an attribute value.
type Kind uint8

// The attribute value kinds.
const (
	KindNone Kind = iota
	KindString
	KindInt
	KindFloat
	KindBool
	KindDate
	KindJSON // a JSON array or object (collections, message payloads)
)

var kindNames = [...]string{"none", "string", "integer", "float", "boolean", "date", "json"}

func (k Kind) String() string { return kindNames[k] }

// Value is a typed environment attribute value: a string, integer, float,
// boolean, date, or a JSON array or object. The zero Value is "none".
type Value struct {
	kind Kind
	s    string
	n    uint64 // integer, float bits, boolean, or unix nanoseconds of a date
}

// String returns a string value.
func String(s string) Value { return Value{kind: KindString, s: s} }

// Int returns an integer value.
func Int(i int64) Value { return Value{kind: KindInt, n: uint64(i)} }

// Float returns a floating-point value.
func Float(f float64) Value { return Value{kind: KindFloat, n: math.Float64bits(f)} }

// Bool returns a boolean value.
func Bool(b bool) Value {
	if b {
		return Value{kind: KindBool, n: 1}
	}
	return Value{kind: KindBool}
}

// Date returns a date value (kept in UTC, to the nanosecond).
func Date(t time.Time) Value { return Value{kind: KindDate, n: uint64(t.UnixNano())} }

// JSON returns a value holding a JSON array or object, kept in canonical
// form (compact, object keys sorted, as encoding/json writes it). Scalars
// are refused: use the scalar kinds for them.
func JSON(raw []byte) (Value, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '[' && raw[0] != '{') {
		return Value{}, fmt.Errorf("a JSON attribute value is an array or an object, not %.20q", raw)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return Value{}, fmt.Errorf("JSON attribute value: %w", err)
	}
	if dec.More() {
		return Value{}, fmt.Errorf("JSON attribute value: data after the value")
	}
	return jsonOf(x)
}

// jsonOf encodes an array or object as a JSON value in canonical form.
func jsonOf(x any) (Value, error) {
	b, err := json.Marshal(x)
	if err != nil {
		return Value{}, fmt.Errorf("JSON attribute value: %w", err)
	}
	return Value{kind: KindJSON, s: string(b)}, nil
}

// ValueOf converts a Go value (string, bool, any integer or float type,
// time.Time, json.Number or Value) into a Value.
func ValueOf(x any) (Value, error) {
	switch v := x.(type) {
	case Value:
		return v, nil
	case string:
		return String(v), nil
	case bool:
		return Bool(v), nil
	case int:
		return Int(int64(v)), nil
	case int8:
		return Int(int64(v)), nil
	case int16:
		return Int(int64(v)), nil
	case int32:
		return Int(int64(v)), nil
	case int64:
		return Int(v), nil
	case uint:
		return Int(int64(v)), nil
	case uint8:
		return Int(int64(v)), nil
	case uint16:
		return Int(int64(v)), nil
	case uint32:
		return Int(int64(v)), nil
	case uint64:
		if v > math.MaxInt64 {
			return Value{}, fmt.Errorf("integer %d is too large", v)
		}
		return Int(int64(v)), nil
	case float32:
		return Float(float64(v)), nil
	case float64:
		return Float(v), nil
	case time.Time:
		return Date(v), nil
	case json.Number:
		return numberValue(string(v))
	case []any, map[string]any:
		return jsonOf(v)
	case json.RawMessage:
		return JSON(v)
	}
	return Value{}, fmt.Errorf("unsupported attribute value type %T", x)
}

// Kind is the value's type.
func (v Value) Kind() Kind { return v.kind }

// IsNone reports whether v is the zero Value.
func (v Value) IsNone() bool { return v.kind == KindNone }

// Str returns the value of a string attribute, or "" for other kinds.
func (v Value) Str() string { return v.s }

// IntValue returns the integer, or 0 for other kinds.
func (v Value) IntValue() int64 {
	if v.kind == KindInt {
		return int64(v.n)
	}
	return 0
}

// FloatValue returns the float (or the integer as a float).
func (v Value) FloatValue() float64 {
	switch v.kind {
	case KindFloat:
		return math.Float64frombits(v.n)
	case KindInt:
		return float64(int64(v.n))
	}
	return 0
}

// JSONValue returns the JSON text of an array or object value, or nil for
// other kinds.
func (v Value) JSONValue() []byte {
	if v.kind != KindJSON {
		return nil
	}
	return []byte(v.s)
}

// BoolValue returns the boolean, or false for other kinds.
func (v Value) BoolValue() bool { return v.kind == KindBool && v.n == 1 }

// DateValue returns the date. A string holding an RFC 3339 time also reads
// as a date, since that is how the HTTP API writes dates.
func (v Value) DateValue() (time.Time, bool) {
	switch v.kind {
	case KindDate:
		return time.Unix(0, int64(v.n)).UTC(), true
	case KindString:
		t, err := time.Parse(time.RFC3339Nano, v.s)
		return t.UTC(), err == nil
	}
	return time.Time{}, false
}

// Any returns the value as a plain Go value (string, int64, float64, bool,
// time.Time; a JSON value as []any or map[string]any holding json.Number
// for numbers) or nil.
func (v Value) Any() any {
	switch v.kind {
	case KindString:
		return v.s
	case KindInt:
		return int64(v.n)
	case KindFloat:
		return v.FloatValue()
	case KindBool:
		return v.BoolValue()
	case KindDate:
		t, _ := v.DateValue()
		return t
	case KindJSON:
		dec := json.NewDecoder(bytes.NewReader([]byte(v.s)))
		dec.UseNumber()
		var x any
		if dec.Decode(&x) != nil {
			return nil
		}
		return x
	}
	return nil
}

// String renders the value as text (dates in RFC 3339).
func (v Value) String() string {
	switch v.kind {
	case KindString:
		return v.s
	case KindInt:
		return strconv.FormatInt(int64(v.n), 10)
	case KindFloat:
		return strconv.FormatFloat(v.FloatValue(), 'g', -1, 64)
	case KindBool:
		return strconv.FormatBool(v.BoolValue())
	case KindDate:
		t, _ := v.DateValue()
		return t.Format(time.RFC3339Nano)
	case KindJSON:
		return v.s
	}
	return ""
}

// MarshalJSON writes strings, numbers and booleans as JSON scalars. A float
// always carries a fraction or exponent so that it reads back as a float;
// a date is written as {"date": "<RFC 3339>"} so that it keeps its type.
func (v Value) MarshalJSON() ([]byte, error) {
	switch v.kind {
	case KindString:
		return json.Marshal(v.s)
	case KindInt:
		return strconv.AppendInt(nil, int64(v.n), 10), nil
	case KindFloat:
		f := v.FloatValue()
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("float %v cannot be written as JSON", f)
		}
		b := strconv.AppendFloat(nil, f, 'g', -1, 64)
		if !bytes.ContainsAny(b, ".eE") {
			b = append(b, ".0"...)
		}
		return b, nil
	case KindBool:
		return strconv.AppendBool(nil, v.BoolValue()), nil
	case KindDate:
		return []byte(`{"date":"` + v.String() + `"}`), nil
	case KindJSON:
		return []byte(v.s), nil
	}
	return []byte("null"), nil
}

// UnmarshalJSON reads what MarshalJSON writes; a number with no fraction or
// exponent is an integer. An object holding only "date" with an RFC 3339
// time is a date; any other array or object is a JSON value.
func (v *Value) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return fmt.Errorf("empty attribute value")
	}
	switch b[0] {
	case 'n':
		*v = Value{}
		return nil
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*v = String(s)
		return nil
	case 't', 'f':
		var x bool
		if err := json.Unmarshal(b, &x); err != nil {
			return err
		}
		*v = Bool(x)
		return nil
	case '{':
		var d map[string]json.RawMessage
		if err := json.Unmarshal(b, &d); err != nil {
			return fmt.Errorf("attribute value: %w", err)
		}
		if raw, ok := d["date"]; ok && len(d) == 1 {
			var t time.Time
			if err := json.Unmarshal(raw, &t); err == nil {
				*v = Date(t)
				return nil
			}
		}
		x, err := JSON(b)
		if err != nil {
			return err
		}
		*v = x
		return nil
	case '[':
		x, err := JSON(b)
		if err != nil {
			return err
		}
		*v = x
		return nil
	}
	x, err := numberValue(string(b))
	if err != nil {
		return err
	}
	*v = x
	return nil
}

// numberValue reads a JSON number: an integer when it has no fraction or
// exponent, else a float. An integer that does not fit in 64 bits is an
// error rather than a float that would lose its digits.
func numberValue(s string) (Value, error) {
	i, err := strconv.ParseInt(s, 10, 64)
	if err == nil {
		return Int(i), nil
	}
	if errors.Is(err, strconv.ErrRange) && !strings.ContainsAny(s, ".eE") {
		return Value{}, fmt.Errorf("integer %s does not fit in 64 bits (from %d to %d); send it as a string", s, int64(math.MinInt64), int64(math.MaxInt64))
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return Value{}, fmt.Errorf("attribute value %q is not a string, number, boolean or date", s)
	}
	return Float(f), nil
}
