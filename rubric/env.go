package rubric

import "time"

// MapEnv is an Env backed by maps, for tests and for embedding Rubric where
// the names are known up front. A name missing from its map gives
// ErrUnknownName. The zero MapEnv holds no names.
type MapEnv struct {
	Predicates map[string]bool
	Dates      map[string]time.Time
	Strings    map[string]string
}

// Predicate returns the named predicate.
func (e MapEnv) Predicate(name string) (bool, error) {
	v, ok := e.Predicates[name]
	if !ok {
		return false, ErrUnknownName
	}
	return v, nil
}

// DateFunction returns the named date.
func (e MapEnv) DateFunction(name string) (time.Time, error) {
	v, ok := e.Dates[name]
	if !ok {
		return time.Time{}, ErrUnknownName
	}
	return v, nil
}

// StringFunction returns the named string.
func (e MapEnv) StringFunction(name string) (string, error) {
	v, ok := e.Strings[name]
	if !ok {
		return "", ErrUnknownName
	}
	return v, nil
}
