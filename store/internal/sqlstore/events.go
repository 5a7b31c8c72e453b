package sqlstore

import (
	"github.com/veena-wf/veena/store"
)

// ScanEvents reads rows of event records (one data column, in seq order)
// into the events of process with Seq > after, at most limit (no bound if
// limit <= 0). Errors of the driver go through wrap, which classifies them
// for the backend; a record that does not decode is returned as it is.
func ScanEvents(rows Rows, process string, after int64, limit int, wrap func(error) error) ([]store.Event, error) {
	var out []store.Event
	for rows.Next() && (limit <= 0 || len(out) < limit) {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return nil, wrap(err)
		}
		var err error
		if out, err = store.AppendEventsAfter(out, process, data, after, limit); err != nil {
			return nil, err
		}
	}
	return out, wrap(rows.Err())
}
