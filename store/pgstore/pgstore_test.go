package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

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
	if !errors.Is(err, store.ErrSchema) || !strings.Contains(err.Error(), "database schema version 42 is newer than this Veena (1); upgrade Veena") {
		t.Fatalf("newer schema: %v", err)
	}
	if err := s.Ready(ctx); !errors.Is(err, store.ErrSchema) {
		t.Fatalf("Ready on a newer schema: %v", err)
	}
	s.Close()

	fresh, err := pgstore.Open(ctx, pgtest.URL(), pgstore.Options{Schema: pgtest.Schema(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if err := fresh.Migrate(ctx, false); !errors.Is(err, store.ErrSchema) || !strings.Contains(err.Error(), "behind") {
		t.Fatalf("refused migration: %v", err)
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
