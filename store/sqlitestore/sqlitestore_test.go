package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/sqlitestore"
	"github.com/veena-wf/veena/store/storetest"
)

func open(t *testing.T, path string, opts sqlitestore.Options) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(context.Background(), true); err != nil {
		s.Close()
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts sqlitestore.Options
	}{
		{"GroupCommit", sqlitestore.Options{}},
		{"NoBatching", sqlitestore.Options{MaxBatch: 1, Synchronous: "NORMAL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.Store {
				return open(t, filepath.Join(t.TempDir(), "veena.db"), tc.opts)
			})
		})
	}
}

func setSchemaVersion(t *testing.T, path string, v int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("UPDATE schema_version SET version = ?", v); err != nil {
		t.Fatal(err)
	}
}

func TestSchemaVersions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "veena.db")
	open(t, path, sqlitestore.Options{}).Close()

	setSchemaVersion(t, path, 99)
	s, err := sqlitestore.Open(path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Migrate(ctx, true)
	s.Close()
	if !errors.Is(err, store.ErrSchema) || !strings.Contains(err.Error(), "database schema version 99 is newer than this Veena (") || !strings.Contains(err.Error(), "); upgrade Veena") {
		t.Fatalf("newer schema: %v", err)
	}

	fresh := filepath.Join(t.TempDir(), "fresh.db")
	s, err = sqlitestore.Open(fresh, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Migrate(ctx, false)
	s.Close()
	if !errors.Is(err, store.ErrSchema) || !strings.Contains(err.Error(), "behind") {
		t.Fatalf("refused migration: %v", err)
	}
}

func TestUnreachable(t *testing.T) {
	_, err := sqlitestore.Open(filepath.Join(t.TempDir(), "no", "such", "dir", "veena.db"), sqlitestore.Options{})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("opening in a missing directory: want ErrUnavailable, have %v", err)
	}
}
