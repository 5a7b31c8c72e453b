package pgstore

import (
	"slices"
	"strconv"
	"strings"
)

// A command's writes are not sent one statement each: the server's work
// per statement is much of a command's cost (on pgbench, a wait process's
// start and completion ran 50% faster as two statements than as five).
// They wait as pieces and go out joined into one statement, each piece a
// data-modifying WITH query (WITH w1 AS (INSERT …), w2 AS (UPDATE …)
// SELECT …), which the server runs all or nothing.
//
// The tree check of ExpectTree rides on the command's UPDATE of its root
// row: a first WITH query locks the row without waiting (FOR UPDATE
// NOWAIT: a held row fails the statement, ErrBusy) if it is at the
// expected version with an empty inbox, the UPDATE only matches the row if
// that query found it, and the statement divides by the number of rows the
// UPDATE matched (zero: ErrStale).
//
// Queries of one statement see the same snapshot and must not write the
// same row twice, so a piece that writes a row another waiting piece
// writes starts a new statement.

// piece is one write waiting to be sent.
type piece struct {
	sql  string // with its own $1, $2, … placeholders
	args []any
	key  string // the rows it writes (see rowKey), to keep two writes of a row apart
	// check is set on an UPDATE of the row of root, ending in its WHERE
	// clause, that carries ExpectTree's check: the tree must be at expect.
	check  bool
	root   string
	expect int64
}

// lockExpected locks the row of root $1 without waiting if the tree is at
// version $2 with an empty inbox; it finds no row otherwise.
const lockExpected = `SELECT 1 FROM processes p WHERE p.id = $1 AND p.root_id = p.id AND p.tree_version = $2
	AND NOT EXISTS (SELECT 1 FROM inbox i WHERE i.root_id = p.id AND NOT i.done) FOR UPDATE OF p NOWAIT`

// maxParams bounds the placeholders of one joined statement (the protocol
// allows 65,535).
const maxParams = 4096

// rowKey names the rows a piece writes: the table and the leading columns
// of their key. A key names all the rows of the keys it is a prefix of.
func rowKey(table string, cols ...string) string {
	return table + "\x00" + strings.Join(cols, "\x00")
}

// overlap tells whether two row keys may name the same row.
func overlap(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return a == b || strings.HasPrefix(b, a+"\x00")
}

// write adds a piece for the running command.
func (t *tx) write(key string, sql string, args ...any) {
	if key != "" {
		for _, p := range t.pending {
			if overlap(p.key, key) {
				t.seal()
				break
			}
		}
	}
	if t.params+len(args) > maxParams {
		t.seal()
	}
	p := piece{sql: sql, args: args, key: key}
	t.pending = append(t.pending, p)
	t.params += len(args)
}

// writeRoot adds an UPDATE of the process row id; if the command expects
// the tree rooted there at a version, the UPDATE carries the check.
func (t *tx) writeRoot(id string, sql string, args ...any) {
	t.write(rowKey("processes", id), sql, args...)
	if t.expecting && t.expectRoot == id {
		p := &t.pending[len(t.pending)-1]
		p.check, p.root, p.expect = true, id, t.expectVersion
		t.expecting = false
	}
}

// end ends the running command's writes: a check no UPDATE of the root
// carried is sent as a statement of its own.
func (t *tx) end() {
	if t.expecting {
		t.expecting = false
		t.seal()
		t.b.Queue(`SELECT 1 / count(*)::int FROM (`+lockExpected+`) AS expected`, t.expectRoot, t.expectVersion)
		t.owners = append(t.owners, t.cur)
	}
	t.seal()
}

// drop forgets the running command's waiting writes and check.
func (t *tx) drop() {
	t.pending, t.params, t.expecting = t.pending[:0], 0, false
}

// seal joins the waiting pieces into one queued statement.
func (t *tx) seal() {
	switch {
	case len(t.pending) == 0:
		return
	case len(t.pending) == 1 && !t.pending[0].check:
		t.b.Queue(t.pending[0].sql, t.pending[0].args...)
	default:
		var sb strings.Builder
		args := make([]any, 0, t.params+2)
		sb.WriteString("WITH ")
		checked := slices.IndexFunc(t.pending, func(p piece) bool { return p.check })
		if checked >= 0 {
			// The lock comes first: the UPDATE refers to it.
			args = append(args, t.pending[checked].root, t.pending[checked].expect)
			sb.WriteString("l AS (" + lockExpected + "), ")
		}
		for i, p := range t.pending {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("w")
			sb.WriteString(strconv.Itoa(i + 1))
			sb.WriteString(" AS (")
			renumber(&sb, p.sql, len(args))
			args = append(args, p.args...)
			if p.check {
				sb.WriteString(" AND EXISTS (SELECT 1 FROM l) RETURNING 1")
			}
			sb.WriteString(")")
		}
		if checked >= 0 {
			sb.WriteString(" SELECT 1 / count(*)::int FROM w")
			sb.WriteString(strconv.Itoa(checked + 1))
		} else {
			sb.WriteString(" SELECT 1")
		}
		t.b.Queue(sb.String(), args...)
	}
	t.owners = append(t.owners, t.cur)
	t.pending, t.params = t.pending[:0], 0
}

// renumber writes sql with each placeholder $n shifted to $(n+by). The
// statements are Veena's own: no string literal holds a '$'.
func renumber(sb *strings.Builder, sql string, by int) {
	if by == 0 {
		sb.WriteString(sql)
		return
	}
	for {
		i := strings.IndexByte(sql, '$')
		if i < 0 {
			sb.WriteString(sql)
			return
		}
		sb.WriteString(sql[:i+1])
		sql = sql[i+1:]
		j := 0
		for j < len(sql) && sql[j] >= '0' && sql[j] <= '9' {
			j++
		}
		if j == 0 {
			continue
		}
		n, _ := strconv.Atoi(sql[:j])
		sb.WriteString(strconv.Itoa(n + by))
		sql = sql[j:]
	}
}
