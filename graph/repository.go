package graph

import (
	"fmt"
	"sort"
	"sync"
)

// Repository holds every version of every loaded definition, in memory.
// It is safe for concurrent use.
type Repository struct {
	mu     sync.RWMutex
	byName map[string][]*Graph // versions in order, version i+1 at index i
}

// NewRepository returns an empty repository.
func NewRepository() *Repository {
	return &Repository{byName: map[string][]*Graph{}}
}

// Add stores g as the next version of its name and returns it with true. If
// the latest version has the same hash, nothing is added and that version is
// returned with false. A g whose Version is already set (restored from a
// store) must be exactly the next version.
func (r *Repository) Add(g *Graph) (*Graph, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	vs := r.byName[g.Name]
	if n := len(vs); n > 0 && g.Hash != "" && vs[n-1].Hash == g.Hash {
		return vs[n-1], false, nil
	}
	switch {
	case g.Version == 0:
		g.Version = len(vs) + 1
	case g.Version != len(vs)+1:
		return nil, false, fmt.Errorf("definition %s: version %d does not follow version %d", g.Name, g.Version, len(vs))
	}
	r.byName[g.Name] = append(vs, g)
	return g, true, nil
}

// Latest returns the newest version of the named definition, or nil.
func (r *Repository) Latest(name string) *Graph {
	r.mu.RLock()
	defer r.mu.RUnlock()
	vs := r.byName[name]
	if len(vs) == 0 {
		return nil
	}
	return vs[len(vs)-1]
}

// Get returns one version of the named definition, or nil.
func (r *Repository) Get(name string, version int) *Graph {
	r.mu.RLock()
	defer r.mu.RUnlock()
	vs := r.byName[name]
	if version < 1 || version > len(vs) {
		return nil
	}
	return vs[version-1]
}

// Versions returns every version of the named definition, oldest first.
func (r *Repository) Versions(name string) []*Graph {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]*Graph(nil), r.byName[name]...)
}

// Latests returns the latest version of every definition, sorted by name.
func (r *Repository) Latests() []*Graph {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Graph, 0, len(r.byName))
	for _, vs := range r.byName {
		out = append(out, vs[len(vs)-1])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
