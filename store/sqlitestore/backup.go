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
// readable by its owner only, and opens as any Veena database does. On
// failure no file is left at dest.
func Backup(ctx context.Context, path, dest string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("sqlitestore: back up %s: %w", path, err)
	}
	// Claim the name first: VACUUM INTO fills an empty file, and a file
	// this call did not create is never removed.
	f, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("sqlitestore: back up %s: %s exists already", path, dest)
	} else if err != nil {
		return fmt.Errorf("sqlitestore: back up %s: %w", path, err)
	}
	f.Close()
	if err := vacuumInto(ctx, path, dest); err != nil {
		os.Remove(dest)
		return err
	}
	return nil
}

func vacuumInto(ctx context.Context, path, dest string) error {
	q := url.Values{}
	q.Set("_busy_timeout", "30000")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return fmt.Errorf("sqlitestore: back up %s: %w", path, err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dest); err != nil {
		return fmt.Errorf("sqlitestore: back up %s to %s: %w", path, dest, classify(err))
	}
	return nil
}
