package kernel

import "sort"

// Env is a set of named attributes: persistent ones, which are stored with
// the process, and transient ones (any Go value), which live only in memory
// and never reach a store or the API.
//
// Token environments are shared copy-on-write: a child token starts with its
// parent's Env, and whichever side writes first gets its own copy.
type Env struct {
	attrs     map[string]Value
	transient map[string]any
	shared    bool // referenced by more than one token: copy before writing
}

// NewEnv returns an empty environment.
func NewEnv() *Env { return &Env{} }

// Get returns a persistent attribute.
func (e *Env) Get(name string) (Value, bool) {
	if e == nil {
		return Value{}, false
	}
	v, ok := e.attrs[name]
	return v, ok
}

// Has reports whether a persistent or transient attribute of that name exists.
func (e *Env) Has(name string) bool {
	if e == nil {
		return false
	}
	if _, ok := e.attrs[name]; ok {
		return true
	}
	_, ok := e.transient[name]
	return ok
}

// Set sets a persistent attribute; setting the zero Value removes it.
func (e *Env) Set(name string, v Value) {
	if v.IsNone() {
		delete(e.attrs, name)
		return
	}
	if e.attrs == nil {
		e.attrs = make(map[string]Value, 4)
	}
	e.attrs[name] = v
}

// Remove deletes a persistent attribute.
func (e *Env) Remove(name string) { delete(e.attrs, name) }

// Transient returns a transient attribute.
func (e *Env) Transient(name string) (any, bool) {
	if e == nil {
		return nil, false
	}
	v, ok := e.transient[name]
	return v, ok
}

// SetTransient sets a transient attribute; nil removes it.
func (e *Env) SetTransient(name string, v any) {
	if v == nil {
		delete(e.transient, name)
		return
	}
	if e.transient == nil {
		e.transient = map[string]any{}
	}
	e.transient[name] = v
}

// Names returns the persistent attribute names, sorted.
func (e *Env) Names() []string {
	if e == nil {
		return nil
	}
	names := make([]string, 0, len(e.attrs))
	for n := range e.attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Len is the number of persistent attributes.
func (e *Env) Len() int {
	if e == nil {
		return 0
	}
	return len(e.attrs)
}

// Map returns a copy of the persistent attributes.
func (e *Env) Map() map[string]Value {
	m := make(map[string]Value, e.Len())
	if e != nil {
		for k, v := range e.attrs {
			m[k] = v
		}
	}
	return m
}

// Import copies every persistent and transient attribute of other into e.
func (e *Env) Import(other *Env) {
	if other == nil {
		return
	}
	for k, v := range other.attrs {
		e.Set(k, v)
	}
	for k, v := range other.transient {
		e.SetTransient(k, v)
	}
}

// Clone returns an unshared copy of e.
func (e *Env) Clone() *Env {
	c := &Env{}
	c.Import(e)
	return c
}

// IsEmpty reports whether e holds no attribute at all.
func (e *Env) IsEmpty() bool { return e == nil || (len(e.attrs) == 0 && len(e.transient) == 0) }

// Shared marks e as held by more than one token and returns it: the first
// write through any holder copies it. Stores use it to keep copy-on-write
// sharing when they decode a process.
func (e *Env) Shared() *Env { return e.share() }

// share marks e as referenced by one more holder and returns it.
func (e *Env) share() *Env {
	if e != nil {
		e.shared = true
	}
	return e
}

// EnvFromMap builds an Env from plain values (see ValueOf).
func EnvFromMap(m map[string]any) (*Env, error) {
	e := NewEnv()
	for k, x := range m {
		v, err := ValueOf(x)
		if err != nil {
			return nil, err
		}
		e.Set(k, v)
	}
	return e, nil
}

// SetPersistent replaces the persistent attributes wholesale (used by stores).
func (e *Env) SetPersistent(m map[string]Value) {
	e.attrs = nil
	for k, v := range m {
		e.Set(k, v)
	}
}
