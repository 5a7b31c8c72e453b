package graph

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Bind sets the properties of a custom node type from a <custom> element.
// target must be a non-nil pointer to a struct.
//
// Each child element of e sets the exported field with the element's name,
// the first letter matched case-insensitively (<graphName> sets GraphName),
// or the field tagged `veena:"graphName"`. A tagged field is matched only by
// its tag; `veena:"-"` is never set.
//
//   - A field of struct or pointer-to-struct type (other than time.Time) takes
//     a nested element: its children set the nested fields, and so do its
//     attributes (<task user="pat"><name>x</name></task> sets Task.User and
//     Task.Name). A nil pointer is allocated.
//   - Any other field takes the element's text, trimmed, converted to the
//     field's type: string, bool, every int, uint and float kind,
//     time.Duration (Go syntax, "90s"), time.Time (RFC 3339), pointers to
//     those, types implementing encoding.TextUnmarshaler, and slices of any of
//     them (each repeated element appends one value).
//   - An attribute on such a leaf element sets the field named element name
//     plus capitalised attribute name (<graph name="x"/> sets GraphName). A
//     leaf with attributes and blank text sets only those fields.
//
// A child that names no field, a nested element for a field that is not a
// struct, or a value that does not convert is an error naming the element's
// dotted path. Fields are set in document order; Bind stops at the first error.
func (e *Element) Bind(target any) error {
	if e == nil {
		return nil
	}
	v := reflect.ValueOf(target)
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("bind <%s>: target must be a non-nil pointer to a struct, not %T", e.Name, target)
	}
	return bindChildren(v.Elem(), e, "")
}

var (
	durationType        = reflect.TypeFor[time.Duration]()
	timeType            = reflect.TypeFor[time.Time]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// bindChildren sets fields of the struct sv from the children of el. prefix
// is el's dotted path for messages ("" for the element Bind was called on).
func bindChildren(sv reflect.Value, el *Element, prefix string) error {
	for _, c := range el.Children {
		path := joinPath(prefix, c.Name)
		f, ok, err := fieldFor(sv, c.Name)
		if err != nil {
			return fmt.Errorf("custom element <%s>: %w", path, err)
		}
		if !ok {
			return fmt.Errorf("custom element <%s>: %s has no property %q", path, sv.Type(), c.Name)
		}
		if isNested(f.Type()) {
			nv := f
			if nv.Kind() == reflect.Pointer {
				if nv.IsNil() {
					nv.Set(reflect.New(nv.Type().Elem()))
				}
				nv = nv.Elem()
			}
			for _, a := range c.Attrs {
				if err := setNamed(nv, a.Name, a.Value, path+"@"+a.Name); err != nil {
					return err
				}
			}
			if err := bindChildren(nv, c, path); err != nil {
				return err
			}
			continue
		}
		if len(c.Children) > 0 {
			return fmt.Errorf("custom element <%s> has child elements but property %q of %s has type %s, not a struct",
				path, c.Name, sv.Type(), f.Type())
		}
		if len(c.Attrs) == 0 || strings.TrimSpace(c.Text) != "" {
			if err := setValue(f, strings.TrimSpace(c.Text)); err != nil {
				return fmt.Errorf("custom element <%s>: %w", path, err)
			}
		}
		for _, a := range c.Attrs {
			if a.Name == "" {
				continue
			}
			name := c.Name + strings.ToUpper(a.Name[:1]) + a.Name[1:]
			if err := setNamed(sv, name, a.Value, path+"@"+a.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// setNamed sets the leaf property name of the struct sv from an attribute.
func setNamed(sv reflect.Value, name, value, where string) error {
	f, ok, err := fieldFor(sv, name)
	if err != nil {
		return fmt.Errorf("custom attribute <%s>: %w", where, err)
	}
	if !ok {
		return fmt.Errorf("custom attribute <%s>: %s has no property %q", where, sv.Type(), name)
	}
	if isNested(f.Type()) {
		return fmt.Errorf("custom attribute <%s>: property %q of %s is a struct", where, name, sv.Type())
	}
	if err := setValue(f, strings.TrimSpace(value)); err != nil {
		return fmt.Errorf("custom attribute <%s>: %w", where, err)
	}
	return nil
}

func joinPath(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// isNested reports whether a field of type t takes nested elements.
func isNested(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == timeType {
		return false
	}
	return !reflect.PointerTo(t).Implements(textUnmarshalerType)
}

// fieldFor finds the settable field of the struct sv for a property name,
// allocating nil embedded struct pointers on the way.
func fieldFor(sv reflect.Value, name string) (reflect.Value, bool, error) {
	if name == "" {
		return reflect.Value{}, false, nil
	}
	upper := strings.ToUpper(name[:1]) + name[1:]
	for _, sf := range reflect.VisibleFields(sv.Type()) {
		if !sf.IsExported() {
			continue
		}
		tag, tagged := sf.Tag.Lookup("veena")
		if tagged {
			tag, _, _ = strings.Cut(tag, ",")
		}
		switch {
		case tag == "-":
			continue
		case tagged && tag != "":
			if tag != name {
				continue
			}
		default:
			if sf.Name != upper {
				continue
			}
		}
		f, err := fieldByIndexAlloc(sv, sf.Index)
		if err != nil {
			return reflect.Value{}, false, err
		}
		return f, true, nil
	}
	return reflect.Value{}, false, nil
}

func fieldByIndexAlloc(v reflect.Value, index []int) (reflect.Value, error) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !v.CanSet() {
					return reflect.Value{}, errors.New("cannot allocate an unexported embedded struct")
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	if !v.CanSet() {
		return reflect.Value{}, errors.New("property is not settable")
	}
	return v, nil
}

// setValue converts s to f's type and stores it (appending for slices).
func setValue(f reflect.Value, s string) error {
	t := f.Type()
	if t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8 && !reflect.PointerTo(t).Implements(textUnmarshalerType) {
		ev := reflect.New(t.Elem()).Elem()
		if err := setValue(ev, s); err != nil {
			return err
		}
		f.Set(reflect.Append(f, ev))
		return nil
	}
	if t.Kind() == reflect.Pointer && t.Elem().Kind() != reflect.Struct || t.Kind() == reflect.Pointer && t.Elem() == timeType {
		nv := reflect.New(t.Elem())
		if err := setValue(nv.Elem(), s); err != nil {
			return err
		}
		f.Set(nv)
		return nil
	}
	switch t {
	case durationType:
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a duration (want Go syntax such as 90s or 1h30m)", s)
		}
		f.SetInt(int64(d))
		return nil
	case timeType:
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return fmt.Errorf("%q is not an RFC 3339 time", s)
		}
		f.Set(reflect.ValueOf(tm))
		return nil
	}
	if f.CanAddr() && f.Addr().Type().Implements(textUnmarshalerType) {
		if err := f.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			return fmt.Errorf("%q is not a valid %s: %v", s, t, err)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.String:
		f.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q is not a boolean", s)
		}
		f.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, t.Bits())
		if err != nil {
			return fmt.Errorf("%q is not a valid %s", s, t)
		}
		f.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, err := strconv.ParseUint(s, 10, t.Bits())
		if err != nil {
			return fmt.Errorf("%q is not a valid %s", s, t)
		}
		f.SetUint(n)
	case reflect.Float32, reflect.Float64:
		n, err := strconv.ParseFloat(s, t.Bits())
		if err != nil {
			return fmt.Errorf("%q is not a valid %s", s, t)
		}
		f.SetFloat(n)
	default:
		return fmt.Errorf("cannot set a property of type %s", t)
	}
	return nil
}
