package main

import (
	"context"
	"path/filepath"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/memstore"
	"github.com/veena-wf/veena/store/pgstore"
	"github.com/veena-wf/veena/store/sqlitestore"
)

// storeTuning is how a store commits, from serve's flags; the zero value
// keeps each backend's defaults.
type storeTuning struct {
	// groupCommit is how many concurrent commands may share one commit
	// (0: the backend's default, 64 on SQLite and 1, none, on PostgreSQL).
	groupCommit int
	// synchronous is SQLite's PRAGMA synchronous level ("": FULL).
	synchronous string
}

// openStore opens the store a --db value names and says what it is, for the
// start-up message (a PostgreSQL password is never shown).
func openStore(ctx context.Context, db string, tune storeTuning) (store.Store, string, error) {
	switch {
	case db == "memory" || db == ":memory:":
		return memstore.New(), "memory (nothing is kept after the server stops)", nil
	case isPostgres(db):
		return openPostgres(ctx, db, tune)
	default:
		abs, err := filepath.Abs(db)
		if err != nil {
			return nil, db, err
		}
		return openSQLite(ctx, abs, tune)
	}
}

var (
	openPostgres = func(ctx context.Context, url string, tune storeTuning) (store.Store, string, error) {
		st, err := pgstore.Open(ctx, url, pgstore.Options{GroupCommit: tune.groupCommit})
		if err != nil {
			return nil, redact(url), err
		}
		return st, redact(url) + " (PostgreSQL)", nil
	}
	openSQLite = func(ctx context.Context, path string, tune storeTuning) (store.Store, string, error) {
		st, err := sqlitestore.Open(path, sqlitestore.Options{MaxBatch: tune.groupCommit, Synchronous: tune.synchronous})
		if err != nil {
			return nil, path, err
		}
		return st, path + " (SQLite)", nil
	}
)
