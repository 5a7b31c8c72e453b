package walbuf

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// open opens the database at path through the VFS (or SQLite's own VFS if
// plain) with one connection, in WAL mode with synchronous NORMAL and no
// automatic checkpoints.
func open(t testing.TB, path string, plain bool) *sql.DB {
	t.Helper()
	if err := Register(); err != nil {
		t.Fatal(err)
	}
	dsn := "file:" + path + "?_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=10000&_pragma=wal_autocheckpoint(0)"
	if !plain {
		dsn += "&vfs=" + Name
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func exec1(t testing.TB, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// A commit of several pages is handed to the WAL file in one write.
func TestOneWritePerCommit(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "w.db"), false)
	exec1(t, db, "CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")
	exec1(t, db, "CREATE INDEX t_v ON t (v)")
	pad := strings.Repeat("x", 900)
	for i := range 20 {
		before := writeCalls.Load()
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		for j := range 12 { // some 11 KB in the table and again in the index: several pages
			if _, err := tx.Exec("INSERT INTO t (v) VALUES (?)", fmt.Sprintf("%d-%d-%s", i, j, pad)); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if n := writeCalls.Load() - before; n != 1 {
			t.Fatalf("commit %d: %d writes to the WAL, want 1", i, n)
		}
	}
	var busy, frames, done int
	if err := db.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &done); err != nil {
		t.Fatal(err)
	}
	if frames < 20*3 {
		t.Fatalf("%d WAL frames for 20 commits of several pages", frames)
	}
}

// A commit larger than a write call takes, and than the buffer holds,
// reaches the file whole.
func TestLargeCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	db := open(t, path, false)
	exec1(t, db, "CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
	exec1(t, db, "CREATE INDEX t_v ON t (v)")
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("q", 900)
	const rows = 3000 // some 6 MB of pages with the index, past the page cache: SQLite spills some before the commit
	for i := range rows {
		if _, err := tx.Exec("INSERT INTO t (v) VALUES (?)", fmt.Sprint(i, pad)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	plain := open(t, path, true)
	var n int
	var check string
	if err := plain.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil || n != rows {
		t.Fatalf("%d rows, %v; want %d", n, err, rows)
	}
	if err := plain.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity check: %q, %v", check, err)
	}
}

// Transactions larger than the page cache write frames before they commit
// (spills), may write those pages again, and may roll back, after which the
// next transaction writes over the frames of the rolled back one: the
// database ends as SQLite's own VFS reads it, with what the committed
// transactions wrote and nothing of the others.
func TestSpillsAndRollbacks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db := open(t, path, false)
	exec1(t, db, "PRAGMA cache_size = 20") // pages: a few dozen rows spill
	exec1(t, db, "CREATE TABLE t (k INTEGER PRIMARY KEY, g INTEGER, v TEXT)")
	exec1(t, db, "CREATE INDEX t_v ON t (v)")
	r := rand.New(rand.NewPCG(1, 2))
	pad := strings.Repeat("s", 600)
	want := map[int]int{} // rows by transaction, of the committed ones
	for g := range 300 {
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		n := 1 + r.IntN(150)
		for i := range n {
			if _, err := tx.Exec("INSERT INTO t (g, v) VALUES (?, ?)", g, fmt.Sprint(r.IntN(1000), pad, i)); err != nil {
				t.Fatal(err)
			}
		}
		// Change some rows written earlier in the transaction: their pages
		// may be in the WAL already.
		if _, err := tx.Exec("UPDATE t SET v = v || 'x' WHERE g = ? AND k % 3 = 0", g); err != nil {
			t.Fatal(err)
		}
		if r.IntN(3) == 0 {
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		want[g] = n
		if r.IntN(20) == 0 {
			exec1(t, db, "PRAGMA wal_checkpoint(RESTART)")
		}
	}
	db.Close()
	plain := open(t, path, true)
	var check string
	if err := plain.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity check: %q, %v", check, err)
	}
	rows, err := plain.Query("SELECT g, count(*) FROM t GROUP BY g")
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]int{}
	for rows.Next() {
		var g, n int
		if err := rows.Scan(&g, &n); err != nil {
			t.Fatal(err)
		}
		got[g] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d transactions' rows, want %d", len(got), len(want))
	}
	for g, n := range want {
		if got[g] != n {
			t.Fatalf("transaction %d: %d rows, want %d", g, got[g], n)
		}
	}
}

// Readers on other connections see every commit whole while the writer
// commits, and the files are valid for SQLite's own VFS afterwards.
func TestReadersSeeCommits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.db")
	w := open(t, path, false)
	exec1(t, w, "CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
	exec1(t, w, "CREATE TABLE c (n INTEGER)")
	exec1(t, w, "INSERT INTO c VALUES (0)")
	readers := make([]*sql.DB, 3)
	for i := range readers {
		readers[i] = open(t, path, i == 2) // one reader through SQLite's own VFS
	}
	const commits = 1000
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var pause sync.RWMutex // held by the writer while it restarts the WAL
	var reads atomic.Int64
	errs := make(chan error, len(readers))
	for _, r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := -1
			for ctx.Err() == nil {
				var rows, n int
				pause.RLock()
				tx, err := r.Begin()
				if err == nil {
					err = tx.QueryRow("SELECT count(*) FROM t").Scan(&rows)
				}
				if err == nil {
					err = tx.QueryRow("SELECT n FROM c").Scan(&n)
				}
				if tx != nil {
					tx.Rollback()
				}
				pause.RUnlock()
				switch {
				case err != nil:
					errs <- err
					return
				case rows != n:
					errs <- fmt.Errorf("a reader saw %d rows with the count at %d", rows, n)
					return
				case n < last:
					errs <- fmt.Errorf("a reader saw the count go back from %d to %d", last, n)
					return
				}
				last = n
				reads.Add(1)
			}
		}()
	}
	pad := strings.Repeat("y", 700)
	for i := range commits {
		tx, err := w.Begin()
		if err != nil {
			t.Fatal(err)
		}
		k := 1 + i%7
		for range k {
			if _, err := tx.Exec("INSERT INTO t (v) VALUES (?)", pad); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tx.Exec("UPDATE c SET n = n + ?", k); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			// The next commit writes the WAL from its start again.
			pause.Lock()
			var busy, log, done int
			err := w.QueryRow("PRAGMA wal_checkpoint(RESTART)").Scan(&busy, &log, &done)
			pause.Unlock()
			if err != nil || busy != 0 {
				t.Fatalf("restart the WAL: busy %d, %v", busy, err)
			}
		}
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if reads.Load() < commits/10 {
		t.Fatalf("the readers read %d times during %d commits", reads.Load(), commits)
	}
	t.Logf("%d reads during %d commits", reads.Load(), commits)
	w.Close()
	for _, r := range readers {
		r.Close()
	}
	plain := open(t, path, true)
	var rows, n int
	var check string
	if err := plain.QueryRow("SELECT (SELECT count(*) FROM t), (SELECT n FROM c)").Scan(&rows, &n); err != nil {
		t.Fatal(err)
	}
	if err := plain.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity check: %q, %v", check, err)
	}
	if rows != n || n < commits {
		t.Fatalf("%d rows, count %d after %d commits", rows, n, commits)
	}
}

// A write the file refuses fails the commit, as without the VFS, and every
// commit acknowledged before is in the database.
func TestWriteErrorFailsCommit(t *testing.T) {
	if os.Getenv("WALBUF_CHILD") != "" {
		writeUntilRefused(os.Getenv("WALBUF_CHILD"))
		return
	}
	path := filepath.Join(t.TempDir(), "e.db")
	db := open(t, path, true)
	exec1(t, db, "PRAGMA journal_mode=WAL")
	exec1(t, db, "CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
	db.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriteErrorFailsCommit$")
	cmd.Env = append(os.Environ(), "WALBUF_CHILD="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var acked int
	var commitErr string
	for _, line := range strings.Split(string(out), "\n") {
		if s, ok := strings.CutPrefix(line, "acked "); ok {
			acked, _ = strconv.Atoi(s)
		}
		if s, ok := strings.CutPrefix(line, "refused "); ok {
			commitErr = s
		}
	}
	if acked == 0 || commitErr == "" {
		t.Fatalf("the child did not commit and then fail:\n%s", out)
	}
	t.Logf("%d commits, then: %s", acked, commitErr)
	db = open(t, path, true)
	var rows int
	var check string
	if err := db.QueryRow("SELECT count(*) FROM t").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity check: %q, %v", check, err)
	}
	if rows != acked*5 {
		t.Fatalf("%d rows after %d acknowledged commits of 5", rows, acked)
	}
}

// writeUntilRefused runs in a child process whose files may not grow past
// 256 KiB: it commits five rows at a time until a commit fails, and
// reports how many did not.
func writeUntilRefused(path string) {
	signal.Ignore(syscall.SIGXFSZ) // the write fails with EFBIG instead
	lim := syscall.Rlimit{Cur: 256 << 10, Max: 256 << 10}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Println("setrlimit:", err)
		os.Exit(2)
	}
	if err := Register(); err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_synchronous=NORMAL&_pragma=wal_autocheckpoint(0)&vfs="+Name)
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	db.SetMaxOpenConns(1)
	pad := strings.Repeat("z", 1500)
	deadline := time.Now().Add(time.Minute)
	for acked := 0; time.Now().Before(deadline); acked++ {
		err := func() error {
			tx, err := db.Begin()
			if err != nil {
				return err
			}
			defer tx.Rollback()
			for range 5 {
				if _, err := tx.Exec("INSERT INTO t (v) VALUES (?)", pad); err != nil {
					return err
				}
			}
			return tx.Commit()
		}()
		if err != nil {
			fmt.Printf("acked %d\nrefused %v\n", acked, err)
			os.Exit(0)
		}
	}
	fmt.Println("no commit was refused")
	os.Exit(4)
}
