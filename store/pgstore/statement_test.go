package pgstore

import (
	"fmt"
	"strings"
	"testing"
)

func TestRenumber(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		by   int
		want string
	}{
		{"UPDATE t SET a = $2 WHERE id = $1", 0, "UPDATE t SET a = $2 WHERE id = $1"},
		{"UPDATE t SET a = $2 WHERE id = $1", 7, "UPDATE t SET a = $9 WHERE id = $8"},
		{"VALUES ($1, $10, $11)", 5, "VALUES ($6, $15, $16)"},
		{"SELECT '$' || $1", 1, "SELECT '$' || $2"},
		{"$1", 99, "$100"},
	} {
		var sb strings.Builder
		renumber(&sb, tc.sql, tc.by)
		if sb.String() != tc.want {
			t.Errorf("renumber(%q, %d) = %q, want %q", tc.sql, tc.by, sb.String(), tc.want)
		}
	}
}

func TestOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{rowKey("processes", "p1"), rowKey("processes", "p1"), true},
		{rowKey("processes", "p1"), rowKey("processes", "p10"), false},
		{rowKey("timers", "p1"), rowKey("timers", "p1", "3"), true},
		{rowKey("timers", "p1", "3"), rowKey("timers", "p1"), true},
		{rowKey("timers", "p1", "3"), rowKey("timers", "p1", "4"), false},
		{rowKey("timers", "p1"), rowKey("contexts", "p1"), false},
	} {
		if got := overlap(tc.a, tc.b); got != tc.want {
			t.Errorf("overlap(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}

// TestSeal: a command's writes become one statement, in which the UPDATE
// of the expected root carries the check; a second write of a row starts
// a new statement.
func TestSeal(t *testing.T) {
	tx := newTx(nil)
	tx.ExpectTree(t.Context(), "r", 4)
	tx.write(rowKey("processes", "c"), "INSERT INTO processes (id) VALUES ($1)", "c")
	tx.writeRoot("r", "UPDATE processes SET tree_version = $2 WHERE id = $1", "r", int64(5))
	tx.write("", "INSERT INTO events (process_id, seq) VALUES ($1, $2)", "r", int64(9))
	tx.write(rowKey("timers", "r"), "DELETE FROM timers WHERE process_id = $1", "r")
	tx.write(rowKey("timers", "r", "1"), "INSERT INTO timers (process_id, token) VALUES ($1, $2)", "r", 1)
	tx.write(rowKey("timers", "r", "2"), "INSERT INTO timers (process_id, token) VALUES ($1, $2)", "r", 2)
	tx.end()
	if tx.b.Len() != 2 {
		t.Fatalf("%d statements, want 2", tx.b.Len())
	}
	first, second := tx.b.QueuedQueries[0], tx.b.QueuedQueries[1]
	for _, want := range []string{
		"WITH l AS (SELECT 1 FROM processes p WHERE p.id = $1 AND p.root_id = p.id AND p.tree_version = $2",
		"FOR UPDATE OF p NOWAIT), w1 AS (INSERT INTO processes (id) VALUES ($3))",
		"w2 AS (UPDATE processes SET tree_version = $5 WHERE id = $4 AND EXISTS (SELECT 1 FROM l) RETURNING 1)",
		"w3 AS (INSERT INTO events (process_id, seq) VALUES ($6, $7))",
		"w4 AS (DELETE FROM timers WHERE process_id = $8) SELECT 1 / count(*)::int FROM w2",
	} {
		if !strings.Contains(first.SQL, want) {
			t.Errorf("first statement lacks %q:\n%s", want, first.SQL)
		}
	}
	if want := []any{"r", int64(4), "c", "r", int64(5), "r", int64(9), "r"}; fmt.Sprint(first.Arguments) != fmt.Sprint(want) {
		t.Errorf("first statement's arguments %v, want %v", first.Arguments, want)
	}
	if want := "WITH w1 AS (INSERT INTO timers (process_id, token) VALUES ($1, $2)), w2 AS (INSERT INTO timers (process_id, token) VALUES ($3, $4)) SELECT 1"; second.SQL != want {
		t.Errorf("second statement:\n%s\nwant\n%s", second.SQL, want)
	}

	// Without an UPDATE of the root, the check is a statement of its own.
	tx = newTx(nil)
	tx.ExpectTree(t.Context(), "r", 4)
	tx.write("", "INSERT INTO events (process_id, seq) VALUES ($1, $2)", "r", int64(9))
	tx.end()
	if tx.b.Len() != 2 || !strings.Contains(tx.b.QueuedQueries[1].SQL, "FOR UPDATE OF p NOWAIT) AS expected") ||
		tx.b.QueuedQueries[0].SQL != "INSERT INTO events (process_id, seq) VALUES ($1, $2)" {
		t.Fatalf("statements %v", tx.b.QueuedQueries)
	}
}
