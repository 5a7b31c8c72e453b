package main

import (
	"context"
	"path/filepath"

	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/memstore"
	"github.com/veena-wf/veena/store/pgstore"
	"github.com/veena-wf/veena/store/sqlitestore"
)

// openStore opens the store a --db value names and says what it is, for the
// start-up message (a PostgreSQL password is never shown).
func openStore(ctx context.Context, db string) (store.Store, string, error) {
	switch {
	case db == "memory" || db == ":memory:":
		return memstore.New(), "memory (nothing is kept after the server stops)", nil
	case isPostgres(db):
		return openPostgres(ctx, db)
	default:
		abs, err := filepath.Abs(db)
		if err != nil {
			return nil, db, err
		}
		return openSQLite(ctx, abs)
	}
}

var (
	openPostgres = func(ctx context.Context, url string) (store.Store, string, error) {
		st, err := pgstore.Open(ctx, url, pgstore.Options{})
		if err != nil {
			return nil, redact(url), err
		}
		return st, redact(url) + " (PostgreSQL)", nil
	}
	openSQLite = func(ctx context.Context, path string) (store.Store, string, error) {
		st, err := sqlitestore.Open(path, sqlitestore.Options{})
		if err != nil {
			return nil, path, err
		}
		return st, path + " (SQLite)", nil
	}
)
