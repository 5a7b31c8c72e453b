package store

import (
	"fmt"
	"io/fs"
	"path"
)

// Migrations reads the SQL migrations of a backend: the files of dir in
// fsys, in name order. Migration i+1 brings a schema from version i to i+1.
func Migrations(fsys fs.FS, dir string) ([]string, error) {
	entries, err := fs.ReadDir(fsys, dir) // sorted by name
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
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
