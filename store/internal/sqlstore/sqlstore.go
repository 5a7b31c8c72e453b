// Package sqlstore holds what Veena's SQL backends (store/sqlitestore and
// store/pgstore) share beyond their dialects: the process and definition
// columns, how their rows are scanned, the query Store.Processes runs, and
// how a request waits for the goroutines that write.
// Errors come back as the driver gave them; each backend classifies them.
package sqlstore

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/veena-wf/veena/store"
)

// Row is one result row, as both drivers give it.
type Row interface{ Scan(dest ...any) error }

// Rows is a result set, as both drivers give it.
type Rows interface {
	Row
	Next() bool
	Err() error
}

// ProcessColumns are the columns of a process row, in the order
// ScanProcess reads them.
const ProcessColumns = `id, root_id, parent_id, parent_token, position, definition, version, state, context, env, snapshot, event_seq, created_at, updated_at, tree_version, waits, stalled`

// ScanProcess reads a row of ProcessColumns.
func ScanProcess(r Row) (*store.Process, error) {
	var p store.Process
	var c *string
	var created, updated int64
	if err := r.Scan(&p.ID, &p.Root, &p.Parent, &p.ParentToken, &p.Position, &p.Definition, &p.Version, &p.State,
		&c, &p.Env, &p.Snapshot, &p.EventSeq, &created, &updated, &p.TreeVersion, &p.Waits, &p.Stalled); err != nil {
		return nil, err
	}
	p.CreatedAt, p.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	if c != nil && *c != "" {
		if err := json.Unmarshal([]byte(*c), &p.Context); err != nil {
			return nil, fmt.Errorf("process %s: context: %w", p.ID, err)
		}
	}
	return &p, nil
}

// ScanProcesses reads every row of ProcessColumns in rows.
func ScanProcesses(rows Rows) ([]*store.Process, error) {
	var out []*store.Process
	for rows.Next() {
		p, err := ScanProcess(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// ContextJSON is the context column of a process: NULL (nil) when the
// process has no context, else a JSON object.
func ContextJSON(c map[string]string) (*string, error) {
	if len(c) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode process context: %w", err)
	}
	s := string(b)
	return &s, nil
}

// DefinitionsQuery reads the definitions loaded after a sequence number
// (its one parameter, written param) in the order they were loaded; scan
// its rows with ScanDefinitions.
func DefinitionsQuery(param string) string {
	return `SELECT seq, name, version, format, hash, file, source, created_at FROM definitions WHERE seq > ` + param + ` ORDER BY seq`
}

// ScanDefinitions reads the rows of DefinitionsQuery.
func ScanDefinitions(rows Rows) ([]*store.Definition, error) {
	var out []*store.Definition
	for rows.Next() {
		var d store.Definition
		var at int64
		if err := rows.Scan(&d.Seq, &d.Name, &d.Version, &d.Format, &d.Hash, &d.File, &d.Source, &at); err != nil {
			return nil, err
		}
		d.CreatedAt = time.Unix(0, at).UTC()
		out = append(out, &d)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// ScanTree reads the rows of one process tree and orders them as
// store.OrderTree does; a wrapped store.ErrNotFound if there are none.
func ScanTree(rows Rows, root string) ([]*store.Process, error) {
	out, err := ScanProcesses(rows)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("process tree %s: %w", root, store.ErrNotFound)
	}
	return store.OrderTree(out), nil
}
