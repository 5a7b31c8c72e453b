package store

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// Migrations reads the SQL migrations of a backend: the files of dir in
// fsys, in name order. Migration i+1 brings a schema from version i to i+1.
// A database records only how many migrations it has run, so the files
// must be numbered 1, 2, 3… (001_name.sql) with no gap or repeat: a file
// added later in between would be skipped by the databases already past it.
func Migrations(fsys fs.FS, dir string) ([]string, error) {
	entries, err := fs.ReadDir(fsys, dir) // sorted by name
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	out := make([]string, 0, len(entries))
	for i, e := range entries {
		num, _, _ := strings.Cut(e.Name(), "_")
		if n, err := strconv.Atoi(num); err != nil || n != i+1 {
			return nil, fmt.Errorf("migration %s should be numbered %d: migrations are numbered in order with no gap or repeat", e.Name(), i+1)
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		out = append(out, string(b))
	}
	return out, nil
}

// CheckSchemaVersion decides whether a database at schema version v can be
// used by a backend that knows known versions: ErrSchema if v is newer, or
// if it is behind and apply (may migrate) is false.
func CheckSchemaVersion(v, known int, apply bool) error {
	switch {
	case v > known:
		return fmt.Errorf("%w: database schema version %d is newer than this Veena (%d); upgrade Veena", ErrSchema, v, known)
	case v < known && !apply:
		return fmt.Errorf("%w: database schema version %d is behind this Veena (%d) and migrations are turned off", ErrSchema, v, known)
	}
	return nil
}

// SchemaVersioner is a store whose database records the version of its
// schema (how many migrations it has run), for tools that report it or
// migrate as a step of their own.
type SchemaVersioner interface {
	// SchemaVersion reads the schema version of the database (0 for one
	// no Veena has migrated yet) and the latest this Veena knows. It
	// changes nothing.
	SchemaVersion(ctx context.Context) (current, latest int, err error)
}
