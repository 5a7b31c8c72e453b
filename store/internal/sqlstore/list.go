package sqlstore

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/veena-wf/veena/store"
)

// Dialect is what the listing queries need to know of a backend's SQL.
type Dialect struct {
	// Param writes the n-th parameter (1-based).
	Param func(n int) string
	// NoSnapshot is an empty binary literal read in place of the snapshot
	// column, which listings leave out.
	NoSnapshot string
	// True is the literal the stalled column holds for true.
	True string
	// Unindexed is the condition that selects rows written without where
	// they wait (Filter.Unindexed); "waits IS NULL" if empty.
	Unindexed string
}

// builder collects the conditions and arguments of a query.
type builder struct {
	d     Dialect
	where []string
	args  []any
}

func (b *builder) arg(v any) string {
	b.args = append(b.args, v)
	return b.d.Param(len(b.args))
}

// idPrefix is a condition on id starting with prefix: a range the primary
// key finds (when the prefix is made of the characters of Veena's ids),
// and an exact test of the prefix.
func (b *builder) idPrefix(prefix string) string {
	// Arguments are taken in the order they appear: "?" counts by position.
	exact := func() string { return "substr(id, 1, " + strconv.Itoa(len(prefix)) + ") = " + b.arg(prefix) }
	lo, hi, ok := IDRange(prefix)
	if !ok {
		return exact()
	}
	cond := "id >= " + b.arg(lo)
	if hi != "" {
		cond += " AND id < " + b.arg(hi)
	}
	return "(" + cond + " AND " + exact() + ")"
}

// IDRange gives bounds lo <= id < hi ("" hi: none) that hold every id
// starting with prefix, when the prefix has only the characters of Veena's
// ids (lowercase hex digits and dashes): then the bounds hold in every
// collation a database may compare them in, dashes being ignored by some.
func IDRange(prefix string) (lo, hi string, ok bool) {
	for _, c := range prefix {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c == '-') {
			return "", "", false
		}
	}
	up := []byte(strings.TrimRight(prefix, "-"))
	for len(up) > 0 {
		i := len(up) - 1
		switch c := up[i]; {
		case c == '9':
			up[i] = 'a'
		case c < 'f':
			up[i] = c + 1
		default: // f: carry
			up = []byte(strings.TrimRight(string(up[:i]), "-"))
			continue
		}
		return prefix, string(up), true
	}
	return prefix, "", true
}

// filter adds the conditions of f, except its cursor and order.
func (b *builder) filter(f store.Filter) {
	if f.Definition != "" {
		b.where = append(b.where, "definition = "+b.arg(f.Definition))
		if f.Version > 0 {
			b.where = append(b.where, "version = "+b.arg(f.Version))
		}
	}
	switch len(f.States) {
	case 0:
	case 1:
		b.where = append(b.where, "state = "+b.arg(f.States[0]))
	default:
		ps := make([]string, len(f.States))
		for i, s := range f.States {
			ps[i] = b.arg(s)
		}
		b.where = append(b.where, "state IN ("+strings.Join(ps, ", ")+")")
	}
	if f.Parent != "" {
		b.where = append(b.where, "parent_id = "+b.arg(f.Parent)+" AND parent_token = "+b.arg(f.ParentToken))
	}
	if f.IDPrefix != "" {
		b.where = append(b.where, b.idPrefix(f.IDPrefix))
	}
	if f.Node != "" {
		b.where = append(b.where, "id IN (SELECT process_id FROM waits WHERE node = "+b.arg(f.Node)+")")
	}
	if f.Stalled {
		b.where = append(b.where, "stalled = "+b.d.True)
	}
	for _, k := range slices.Sorted(maps.Keys(f.Context)) {
		b.where = append(b.where, "id IN (SELECT process_id FROM contexts WHERE key = "+b.arg(k)+" AND value = "+b.arg(f.Context[k])+")")
	}
	if f.Search != "" {
		b.where = append(b.where, "("+b.idPrefix(f.Search)+" OR id IN (SELECT process_id FROM contexts WHERE value = "+b.arg(f.Search)+"))")
	}
	if !f.CreatedFrom.IsZero() {
		b.where = append(b.where, "created_at >= "+b.arg(f.CreatedFrom.UnixNano()))
	}
	if !f.CreatedTo.IsZero() {
		b.where = append(b.where, "created_at < "+b.arg(f.CreatedTo.UnixNano()))
	}
	if f.MinID != "" {
		b.where = append(b.where, "id >= "+b.arg(f.MinID))
	}
	if f.MaxID != "" {
		b.where = append(b.where, "id <= "+b.arg(f.MaxID))
	}
	if f.Unindexed {
		b.where = append(b.where, cmp.Or(b.d.Unindexed, "waits IS NULL"))
	}
}

func (b *builder) whereClause() string {
	if len(b.where) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(b.where, " AND ")
}

// ProcessesQuery is the query of Store.Processes for f and its arguments:
// rows of ProcessColumns with the snapshot left out, newest first (or
// oldest first), after the cursor.
func ProcessesQuery(f store.Filter, d Dialect) (string, []any) {
	b := &builder{d: d}
	b.filter(f)
	order := " ORDER BY id DESC"
	if f.Oldest {
		order = " ORDER BY id"
	}
	if f.After != "" {
		op := " < "
		if f.Oldest {
			op = " > "
		}
		b.where = append(b.where, "id"+op+b.arg(f.After))
	}
	q := `SELECT ` + strings.Replace(ProcessColumns, "snapshot", d.NoSnapshot, 1) + ` FROM processes` + b.whereClause() + order
	if f.Limit > 0 {
		q += " LIMIT " + strconv.Itoa(f.Limit)
	}
	return q, b.args
}

// CountQuery is the query of Store.CountProcesses for f, counting up to
// limit rows (0: all), and its arguments.
func CountQuery(f store.Filter, limit int, d Dialect) (string, []any) {
	b := &builder{d: d}
	b.filter(f)
	if limit <= 0 {
		return `SELECT count(*) FROM processes` + b.whereClause(), b.args
	}
	return `SELECT count(*) FROM (SELECT 1 FROM processes` + b.whereClause() + ` LIMIT ` + strconv.Itoa(limit) + `) AS c`, b.args
}

// WaitChanges is what a process row's write changes in the waits table:
// the nodes to add and those to remove.
func WaitChanges(p *store.Process) (add, del []string) {
	for _, n := range p.WaitNodes {
		if !slices.Contains(p.StoredWaitNodes, n) {
			add = append(add, n)
		}
	}
	for _, n := range p.StoredWaitNodes {
		if !slices.Contains(p.WaitNodes, n) {
			del = append(del, n)
		}
	}
	return add, del
}

// ScanTimerFailures reads rows of (process_id, token, due_at, error,
// failed_at, attempts); fail classifies a driver error.
func ScanTimerFailures(rows Rows, fail func(error) error) ([]store.TimerFailure, error) {
	var out []store.TimerFailure
	for rows.Next() {
		var f store.TimerFailure
		var due, at int64
		if err := rows.Scan(&f.Process, &f.Token, &due, &f.Message, &at, &f.Attempts); err != nil {
			return nil, fail(err)
		}
		f.DueAt, f.At = time.Unix(0, due).UTC(), time.Unix(0, at).UTC()
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(err)
	}
	return out, nil
}
