package kernel

import (
	"sort"
	"sync/atomic"
)

// Env is a set of named attributes: persistent ones, which are stored with
// the process, and transient ones (any Go value), which live only in memory
// and never reach a store or the API.
//
// Environments are shared copy-on-write: a child token starts with an Env
// that shares its parent's attributes (see Share), and every write through
// any Env that shares them — Set, Remove, SetTransient, RemoveTransient,
// Import, SetPersistent — first copies them, so that no write is ever seen
// through another token's Env.
//
// An Env that belongs to a process (its environment, a token's, a token
// set's) also takes part in the kernel's rollback: a write during a command
// that then fails is undone with the rest of the command.
type Env struct {
	d     *envData
	owner *Process // the process it belongs to; nil for a free-standing Env
	epoch uint64   // the journal epoch in which it was last saved
}

// envData holds the attributes one or more Envs share.
type envData struct {
	attrs     map[string]Value
	transient map[string]any
	// shared is set once the attributes are held by more than one Env (or
	// saved by a journal): they are copied before a write. It is atomic
	// because sharing marks attributes that other goroutines may be
	// reading, such as those a process is started with.
	shared atomic.Bool
}

// NewEnv returns an empty environment.
func NewEnv() *Env { return &Env{} }

// own makes e's attributes its own, copying them if they are shared, before
// a write; it records e in the running command's journal first.
func (e *Env) own() *envData {
	if e.owner != nil {
		if j := e.owner.Root().journal; j != nil && e.epoch != j.epoch {
			j.saveEnv(e)
		}
	}
	switch {
	case e.d == nil:
		e.d = &envData{}
	case e.d.shared.Load():
		e.d = e.d.clone()
	}
	return e.d
}

// share marks d as held by more than one Env.
func (d *envData) share() {
	if d != nil && !d.shared.Load() {
		d.shared.Store(true)
	}
}

func (d *envData) clone() *envData {
	c := &envData{}
	if len(d.attrs) > 0 {
		c.attrs = make(map[string]Value, len(d.attrs))
		for k, v := range d.attrs {
			c.attrs[k] = v
		}
	}
	if len(d.transient) > 0 {
		c.transient = make(map[string]any, len(d.transient))
		for k, v := range d.transient {
			c.transient[k] = v
		}
	}
	return c
}

// data returns e's attributes for reading (nil if there are none).
func (e *Env) data() *envData {
	if e == nil {
		return nil
	}
	return e.d
}

// Get returns a persistent attribute.
func (e *Env) Get(name string) (Value, bool) {
	d := e.data()
	if d == nil {
		return Value{}, false
	}
	v, ok := d.attrs[name]
	return v, ok
}

// Has reports whether a persistent attribute of that name exists (see
// HasTransient for transient ones).
func (e *Env) Has(name string) bool {
	d := e.data()
	if d == nil {
		return false
	}
	_, ok := d.attrs[name]
	return ok
}

// Set sets a persistent attribute; setting the zero Value removes it.
func (e *Env) Set(name string, v Value) {
	if v.IsNone() {
		e.Remove(name)
		return
	}
	d := e.own()
	if d.attrs == nil {
		d.attrs = make(map[string]Value, 4)
	}
	d.attrs[name] = v
}

// Remove deletes a persistent attribute.
func (e *Env) Remove(name string) {
	if !e.Has(name) {
		return
	}
	delete(e.own().attrs, name)
}

// Transient returns a transient attribute.
func (e *Env) Transient(name string) (any, bool) {
	d := e.data()
	if d == nil {
		return nil, false
	}
	v, ok := d.transient[name]
	return v, ok
}

// HasTransient reports whether a transient attribute of that name exists.
func (e *Env) HasTransient(name string) bool {
	_, ok := e.Transient(name)
	return ok
}

// SetTransient sets a transient attribute; nil removes it.
func (e *Env) SetTransient(name string, v any) {
	if v == nil {
		e.RemoveTransient(name)
		return
	}
	d := e.own()
	if d.transient == nil {
		d.transient = map[string]any{}
	}
	d.transient[name] = v
}

// RemoveTransient deletes a transient attribute.
func (e *Env) RemoveTransient(name string) {
	if !e.HasTransient(name) {
		return
	}
	delete(e.own().transient, name)
}

// Names returns the persistent attribute names, sorted.
func (e *Env) Names() []string {
	d := e.data()
	if d == nil {
		return nil
	}
	return sortedKeys(d.attrs)
}

// TransientNames returns the transient attribute names, sorted.
func (e *Env) TransientNames() []string {
	d := e.data()
	if d == nil {
		return nil
	}
	return sortedKeys(d.transient)
}

func sortedKeys[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Len is the number of persistent attributes.
func (e *Env) Len() int {
	d := e.data()
	if d == nil {
		return 0
	}
	return len(d.attrs)
}

// Map returns a copy of the persistent attributes.
func (e *Env) Map() map[string]Value {
	d := e.data()
	m := make(map[string]Value, e.Len())
	if d != nil {
		for k, v := range d.attrs {
			m[k] = v
		}
	}
	return m
}

// Import copies every persistent and transient attribute of other into e.
func (e *Env) Import(other *Env) {
	o := other.data()
	if o == nil || (len(o.attrs) == 0 && len(o.transient) == 0) {
		return
	}
	d := e.own()
	if len(o.attrs) > 0 && d.attrs == nil {
		d.attrs = make(map[string]Value, len(o.attrs))
	}
	for k, v := range o.attrs {
		d.attrs[k] = v
	}
	if len(o.transient) > 0 && d.transient == nil {
		d.transient = make(map[string]any, len(o.transient))
	}
	for k, v := range o.transient {
		d.transient[k] = v
	}
}

// Clone returns an unshared copy of e, belonging to no process.
func (e *Env) Clone() *Env {
	c := &Env{}
	if d := e.data(); d != nil {
		c.d = d.clone()
	}
	return c
}

// IsEmpty reports whether e holds no attribute at all.
func (e *Env) IsEmpty() bool {
	d := e.data()
	return d == nil || (len(d.attrs) == 0 && len(d.transient) == 0)
}

// Share returns a new Env holding e's attributes copy-on-write: neither
// sees the other's later writes. Stores use it to keep the sharing of token
// environments when they decode a process.
func (e *Env) Share() *Env {
	if e == nil {
		return nil
	}
	e.d.share()
	return &Env{d: e.d}
}

// Shared is Share.
//
// Deprecated: use Share; each holder needs an Env of its own.
func (e *Env) Shared() *Env { return e.Share() }

// EnvKey identifies the attributes an Env holds: Envs that share their
// attributes (see Share) have the same key. Stores use it to write shared
// attributes once.
type EnvKey struct{ d *envData }

// Key returns the key of e's attributes.
func (e *Env) Key() EnvKey { return EnvKey{e.data()} }

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
	d := e.own()
	d.attrs = nil
	for k, v := range m {
		if !v.IsNone() {
			if d.attrs == nil {
				d.attrs = make(map[string]Value, len(m))
			}
			d.attrs[k] = v
		}
	}
}

// DropTransients removes every transient attribute of e.
func (e *Env) DropTransients() {
	if d := e.data(); d != nil && len(d.transient) > 0 {
		e.own().transient = nil
	}
}

// adopt makes e belong to process p (for the rollback of writes through it)
// and returns it.
func (e *Env) adopt(p *Process, epoch uint64) *Env {
	if e != nil {
		e.owner = p
		e.epoch = epoch
	}
	return e
}
