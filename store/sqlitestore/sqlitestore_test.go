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
	if !errors.Is(err, store.ErrSchema) || !strings.Contains(err.Error(), "database schema version 99 is newer than this Veena (") || !strings.Contains(err.Error(), "); upgrade Veena") {
		t.Fatalf("newer schema: %v", err)
	}
	if cur, latest, err := s.SchemaVersion(ctx); err != nil || cur != 99 || latest >= 99 || latest < 1 {
		t.Fatalf("SchemaVersion of a newer database = %d, %d, %v", cur, latest, err)
	}
	s.Close()

	// A new file is at version 0; checking it, or refusing to migrate
	// it, leaves it so.
	fresh := filepath.Join(t.TempDir(), "fresh.db")
	s, err = sqlitestore.Open(fresh, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if cur, latest, err := s.SchemaVersion(ctx); err != nil || cur != 0 || latest < 1 {
		t.Fatalf("SchemaVersion of a new file = %d, %d, %v", cur, latest, err)
	}
	if err := s.Ready(ctx); !errors.Is(err, store.ErrSchema) || !strings.Contains(err.Error(), "version 0 is behind") {
		t.Fatalf("Ready on a new file: %v", err)
	}
	err = s.Migrate(ctx, false)
	if !errors.Is(err, store.ErrSchema) || !strings.Contains(err.Error(), "behind") {
		t.Fatalf("refused migration: %v", err)
	}
	if cur, _, err := s.SchemaVersion(ctx); err != nil || cur != 0 {
		t.Fatalf("SchemaVersion after a refused migration = %d, %v", cur, err)
	}
	if err := s.Migrate(ctx, true); err != nil {
		t.Fatal(err)
	}
	if cur, latest, err := s.SchemaVersion(ctx); err != nil || cur != latest {
		t.Fatalf("SchemaVersion after migrating = %d, %d, %v", cur, latest, err)
	}
}

func TestUnreachable(t *testing.T) {
	_, err := sqlitestore.Open(filepath.Join(t.TempDir(), "no", "such", "dir", "veena.db"), sqlitestore.Options{})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("opening in a missing directory: want ErrUnavailable, have %v", err)
	}
}
