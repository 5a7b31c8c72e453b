package server_test

import (
	"context"
	"testing"

	"github.com/veena-wf/veena/internal/pgtest"
	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/pgstore"
)

// postgresBackend opens stores in a schema of their own on the PostgreSQL
// server of VEENA_TEST_POSTGRES (dropped when the test ends).
func postgresBackend(testing.TB) *backend {
	return &backend{"postgres", func(t testing.TB) store.Store {
		schema := pgtest.Schema(t)
		st, err := pgstore.Open(context.Background(), pgtest.URL(), pgstore.Options{Schema: schema, MaxConns: 16})
		if err != nil {
			t.Fatalf("open PostgreSQL store: %v", err)
		}
		return st
	}}
}
