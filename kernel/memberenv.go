package kernel

// MemberEnv is a token set's per-member environment: every attribute has a
// value per member index, 0 through the set's MaxMemberIndex. Reading at an
// index outside that range finds nothing; writing there is an error
// (ErrInvalidArgument), never a panic.
type MemberEnv struct{ s *TokenSet }

// Members is the number of member indexes.
func (m MemberEnv) Members() int { return len(m.s.members) }

func (m MemberEnv) at(member int) *Env {
	if member < 0 || member >= len(m.s.members) {
		return nil
	}
	return m.s.members[member]
}

func (m MemberEnv) check(member int) error {
	if member < 0 || member >= len(m.s.members) {
		return refuse(ErrInvalidArgument, "member index %d of token set %s is out of range (0 to %d)", member, m.s.Name, len(m.s.members)-1)
	}
	return nil
}

// Env returns the environment of one member (an empty one, belonging to
// nothing, for an index out of range).
func (m MemberEnv) Env(member int) *Env {
	if e := m.at(member); e != nil {
		return e
	}
	return NewEnv()
}

// Get reads an attribute of a member.
func (m MemberEnv) Get(member int, name string) (Value, bool) { return m.at(member).Get(name) }

// Has reports whether a member has the attribute.
func (m MemberEnv) Has(member int, name string) bool { return m.at(member).Has(name) }

// Names lists a member's attribute names, sorted.
func (m MemberEnv) Names(member int) []string { return m.at(member).Names() }

// Set sets an attribute of a member.
func (m MemberEnv) Set(member int, name string, v Value) error {
	if err := m.check(member); err != nil {
		return err
	}
	m.s.members[member].Set(name, v)
	return nil
}

// Remove removes an attribute of a member.
func (m MemberEnv) Remove(member int, name string) error {
	if err := m.check(member); err != nil {
		return err
	}
	m.s.members[member].Remove(name)
	return nil
}

// SetList spreads values over the members: element i goes to member i;
// elements beyond the last member are ignored, members beyond the list are
// left as they are. A zero Value removes the attribute of that member.
func (m MemberEnv) SetList(name string, values []Value) { m.setList(name, values) }

func (m MemberEnv) setList(name string, values []Value) {
	for i, v := range values {
		if i >= len(m.s.members) {
			break
		}
		m.s.members[i].Set(name, v)
	}
}

// RemoveAll removes an attribute at every member.
func (m MemberEnv) RemoveAll(name string) {
	for _, e := range m.s.members {
		e.Remove(name)
	}
}

// Transient reads a transient attribute of a member.
func (m MemberEnv) Transient(member int, name string) (any, bool) {
	return m.at(member).Transient(name)
}

// HasTransient reports whether a member has the transient attribute.
func (m MemberEnv) HasTransient(member int, name string) bool {
	return m.at(member).HasTransient(name)
}

// SetTransient sets a transient attribute of a member (nil removes it).
func (m MemberEnv) SetTransient(member int, name string, v any) error {
	if err := m.check(member); err != nil {
		return err
	}
	m.s.members[member].SetTransient(name, v)
	return nil
}

// RemoveTransient removes a transient attribute of a member.
func (m MemberEnv) RemoveTransient(member int, name string) error {
	if err := m.check(member); err != nil {
		return err
	}
	m.s.members[member].RemoveTransient(name)
	return nil
}

// RemoveTransientAll removes a transient attribute at every member.
func (m MemberEnv) RemoveTransientAll(name string) {
	for _, e := range m.s.members {
		e.RemoveTransient(name)
	}
}
