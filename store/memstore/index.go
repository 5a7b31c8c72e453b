package memstore

// processIndex finds processes by a key made of what they hold (a context
// pair, what a correlation waits for): each key's set of process ids.
type processIndex map[string]map[string]struct{}

func (x processIndex) add(key, process string) {
	ps := x[key]
	if ps == nil {
		ps = map[string]struct{}{}
		x[key] = ps
	}
	ps[process] = struct{}{}
}

func (x processIndex) remove(key, process string) {
	if ps := x[key]; ps != nil {
		if delete(ps, process); len(ps) == 0 {
			delete(x, key)
		}
	}
}
