package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
)

// Backup writes a copy of the database at path to dest, a file that must
// not exist yet. The copy is one consistent snapshot (SQLite's VACUUM
// INTO, in one read transaction): every commit made before the backup
// began is in it, none made after, and an engine using the database goes
// on meanwhile. The copy is compacted, without free pages or a WAL file,
// and opens as any Veena database does. On failure no file is left at
// dest.
func Backup(ctx context.Context, path, dest string) (err error) {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("sqlitestore: back up %s: %w", path, err)
	}
	// VACUUM INTO refuses an existing file; say so before it does.
	if _, err := os.Stat(dest); err == nil {
		return fmt.Errorf("sqlitestore: back up %s: %s exists already", path, dest)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sqlitestore: back up %s: %w", path, err)
	}
	q := url.Values{}
	q.Set("_busy_timeout", "30000")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return fmt.Errorf("sqlitestore: back up %s: %w", path, err)
	}
	defer db.Close()
	defer func() {
		if err != nil {
			// A failed VACUUM INTO may leave a partial file behind.
			os.Remove(dest)
		}
	}()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dest); err != nil {
		return fmt.Errorf("sqlitestore: back up %s to %s: %w", path, dest, classify(err))
	}
	return nil
}
