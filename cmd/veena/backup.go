package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/veena-wf/veena/store/sqlitestore"
)

func newBackupCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "backup FILE",
		Short: "Copy an SQLite database to FILE, also while veena serve uses it",
		Long: `Write a copy of the SQLite database --db names (VEENA_DB, default ` + DefaultDB + `) to
FILE (readable by its owner only), which must not exist yet. The copy is one
consistent snapshot: every command acknowledged before the backup began is
in it, whole, and none that came later. A running veena serve goes on
meanwhile. To restore, stop the server and put the copy in the database's
place (removing the old file's -wal and -shm files), or point --db at the
copy.

Copying the file itself while the server runs is not safe: recent commits
live in the -wal file beside it. The access tokens are not in the database
but in ` + TokenFileName + ` beside it: copy that file as it is. For PostgreSQL
use pg_dump.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("db") {
				db = env("VEENA_DB", DefaultDB)
			}
			return backup(cmd.Context(), db, args[0], cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&db, "db", DefaultDB, "the SQLite database to copy (env VEENA_DB)")
	return cmd
}

func backup(ctx context.Context, db, dest string, out io.Writer) error {
	switch {
	case db == "memory" || db == ":memory:":
		return errors.New("veena backup: --db memory keeps nothing to back up")
	case isPostgres(db):
		return errors.New("veena backup: the database is PostgreSQL: back it up with pg_dump (or your usual PostgreSQL backups)")
	}
	src, err := filepath.Abs(db)
	if err != nil {
		return fmt.Errorf("veena backup: %w", err)
	}
	if dest, err = filepath.Abs(dest); err != nil {
		return fmt.Errorf("veena backup: %w", err)
	}
	if err := sqlitestore.Backup(ctx, src, dest); err != nil {
		return fmt.Errorf("veena backup: %w", err)
	}
	fmt.Fprintf(out, "backed up %s to %s\n", src, dest)
	return nil
}
