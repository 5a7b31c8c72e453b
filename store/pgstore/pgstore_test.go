package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/veena-wf/veena/internal/pgtest"
	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/pgstore"
	"github.com/veena-wf/veena/store/storetest"
)

func open(t *testing.T, schema string) *pgstore.Store {
	return openWith(t, pgstore.Options{Schema: schema})
}

func openWith(t *testing.T, opts pgstore.Options) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), pgtest.URL(), opts)
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
	t.Run("OneCommitPerUpdate", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store { return open(t, pgtest.Schema(t)) })
	})
	t.Run("GroupCommit", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			return openWith(t, pgstore.Options{Schema: pgtest.Schema(t), GroupCommit: 32, Committers: 2})
		})
	})
}

func TestSchemaVersions(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	s := open(t, schema)
	if _, err := s.Pool().Exec(ctx, "UPDATE schema_version SET version = 42"); err != nil {
		t.Fatal(err)
	}
	err := s.Migrate(ctx, true)
	if !errors.Is(err, store.ErrSchema) || !strings.Contains(err.Error(), "database schema version 42 is newer than this Veena (") || !strings.Contains(err.Error(), "); upgrade Veena") {
		t.Fatalf("newer schema: %v", err)
	}
	if err := s.Ready(ctx); !errors.Is(err, store.ErrSchema) {
		t.Fatalf("Ready on a newer schema: %v", err)
	}
	if cur, latest, err := s.SchemaVersion(ctx); err != nil || cur != 42 || latest >= 42 || latest < 1 {
		t.Fatalf("SchemaVersion of a newer database = %d, %d, %v", cur, latest, err)
	}
	s.Close()

	// A new schema is at version 0; checking it, or refusing to migrate
	// it, leaves it so.
	fresh, err := pgstore.Open(ctx, pgtest.URL(), pgstore.Options{Schema: pgtest.Schema(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if cur, latest, err := fresh.SchemaVersion(ctx); err != nil || cur != 0 || latest < 1 {
		t.Fatalf("SchemaVersion of a new schema = %d, %d, %v", cur, latest, err)
	}
	if err := fresh.Ready(ctx); !errors.Is(err, store.ErrSchema) || !strings.Contains(err.Error(), "version 0 is behind") {
		t.Fatalf("Ready on a new schema: %v", err)
	}
	if err := fresh.Migrate(ctx, false); !errors.Is(err, store.ErrSchema) || !strings.Contains(err.Error(), "behind") {
		t.Fatalf("refused migration: %v", err)
	}
	if cur, _, err := fresh.SchemaVersion(ctx); err != nil || cur != 0 {
		t.Fatalf("SchemaVersion after a refused migration = %d, %v", cur, err)
	}
	if err := fresh.Migrate(ctx, true); err != nil {
		t.Fatal(err)
	}
	if cur, latest, err := fresh.SchemaVersion(ctx); err != nil || cur != latest {
		t.Fatalf("SchemaVersion after migrating = %d, %d, %v", cur, latest, err)
	}
}

func TestUnreachable(t *testing.T) {
	ctx := context.Background()
	s, err := pgstore.Open(ctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2", pgstore.Options{})
	if err == nil {
		err = s.Migrate(ctx, true)
		s.Close()
	}
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("unreachable server: want ErrUnavailable, have %v", err)
	}
}

// TestTryLockTreeDoesNotWait: while another transaction holds a tree,
// TryLockTree answers ErrBusy at once (the command then queues in the
// inbox) and LockTree waits for the holder.
func TestTryLockTreeDoesNotWait(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := open(t, pgtest.Schema(t))
	defer s.Close()
	err := s.Update(ctx, func(ctx context.Context, tx store.Tx) error {
		return tx.PutProcess(ctx, &store.Process{ID: "r", Root: "r", ParentToken: -1, Definition: "d", Version: 1,
			State: "executing", Env: []byte(`{}`), Snapshot: []byte(`{}`)})
	})
	if err != nil {
		t.Fatal(err)
	}
	holder, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, `SELECT 1 FROM processes WHERE id = 'r' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	err = s.Update(ctx, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.TryLockTree(ctx, "r")
		return err
	})
	if !errors.Is(err, store.ErrBusy) {
		t.Fatalf("try-lock of a held tree: %v, want ErrBusy", err)
	}
	locked := make(chan error, 1)
	go func() {
		locked <- s.Update(ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.LockTree(ctx, "r")
			return err
		})
	}()
	select {
	case err := <-locked:
		t.Fatalf("LockTree did not wait for the holder: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := holder.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-locked; err != nil {
		t.Fatalf("LockTree after the holder committed: %v", err)
	}
}
