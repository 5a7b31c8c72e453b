package sqlstore

import (
	"time"

	"github.com/veena-wf/veena/store"
)

// CommandColumns are the columns of an inbox row, in the order ScanCommand
// reads them.
const CommandColumns = `seq, root_id, key, payload, enqueued_at, done, outcome, done_at`

// ScanCommand reads a row of CommandColumns.
func ScanCommand(r Row) (*store.Command, error) {
	var c store.Command
	var enq, doneAt int64
	if err := r.Scan(&c.Seq, &c.Root, &c.Key, &c.Payload, &enq, &c.Done, &c.Outcome, &doneAt); err != nil {
		return nil, err
	}
	c.EnqueuedAt = time.Unix(0, enq).UTC()
	if doneAt != 0 {
		c.DoneAt = time.Unix(0, doneAt).UTC()
	}
	return &c, nil
}
