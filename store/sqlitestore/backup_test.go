package sqlitestore_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/sqlitestore"
)

// TestBackupWhileWriting: a backup taken while a store commits holds a
// consistent snapshot: the rows of every command committed before it
// began, each command whole, and opens as a Veena database.
func TestBackupWhileWriting(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "veena.db")
	s := open(t, path, sqlitestore.Options{})
	defer s.Close()

	// Each command writes a process row and its context together.
	put := func(i int) error {
		id := "p" + strconv.Itoa(i)
		return s.Update(ctx, func(ctx context.Context, tx store.Tx) error {
			if err := tx.PutProcess(ctx, &store.Process{ID: id, Root: id, ParentToken: -1, Definition: "d", Version: 1,
				State: "executing", Env: []byte("{}"), Snapshot: []byte("{}")}); err != nil {
				return err
			}
			return tx.PutContext(ctx, id, map[string]string{"n": strconv.Itoa(i)}, nil)
		})
	}
	for i := range 200 {
		if err := put(i); err != nil {
			t.Fatal(err)
		}
	}
	var committed atomic.Int64
	committed.Store(200)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 200; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := put(i); err != nil {
				t.Error(err)
				return
			}
			committed.Store(int64(i + 1))
		}
	}()
	before := committed.Load()
	dest := filepath.Join(dir, "backup.db")
	err := sqlitestore.Backup(ctx, path, dest)
	after := committed.Load()
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}

	b := open(t, dest, sqlitestore.Options{})
	defer b.Close()
	ps, err := b.Processes(ctx, store.Filter{Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(ps))
	if n < before || n > after+1 {
		t.Fatalf("the backup holds %d processes; %d were committed when it began, %d when it ended", n, before, after)
	}
	for _, p := range ps {
		ids, err := b.FindByContext(ctx, map[string]string{"n": strings.TrimPrefix(p.ID, "p")}, 2)
		if err != nil || len(ids) != 1 || ids[0] != p.ID {
			t.Fatalf("process %s in the backup without its context: %v %v", p.ID, ids, err)
		}
	}
	t.Logf("backup of %d processes taken while %d more committed", n, after-before)

	if fi, err := os.Stat(dest); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the backup's mode: %v %v", fi, err)
	}

	// An existing file is neither overwritten nor removed; a missing
	// database is named.
	if err := sqlitestore.Backup(ctx, path, dest); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Fatalf("backup onto an existing file: %v", err)
	}
	keep := filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(keep, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := sqlitestore.Backup(ctx, path, keep); err == nil {
		t.Fatal("backup onto a file of other content succeeded")
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "keep" {
		t.Fatalf("a refused backup changed the file there: %q %v", b, err)
	}
	missing := filepath.Join(dir, "none.db")
	if err := sqlitestore.Backup(ctx, missing, filepath.Join(dir, "b2.db")); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("backup of a missing database: %v", err)
	}
	// A file that is not a database fails and leaves nothing behind.
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not a database ", 400)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "b3.db")
	if err := sqlitestore.Backup(ctx, junk, out); err == nil {
		t.Fatal("a file that is not a database was backed up")
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("a failed backup left %s: %v", out, err)
	}
}
