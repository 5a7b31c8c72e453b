package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/veena-wf/veena/store"
)

// exitMigrationsDue is the exit status of `veena migrate --check` when the
// database is behind: not an error, an answer.
const exitMigrationsDue = 3

func newMigrateCmd() *cobra.Command {
	var db string
	var check bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Bring a database's schema up to date, or say whether it is",
		Long: `Bring the schema of the database --db names (VEENA_DB; an SQLite file
or a PostgreSQL URL, as for veena serve) up to this Veena's version.

veena serve migrates at start unless started with --no-migrate; this
command lets the migration be a step of its own, run once before the
engines start. Migrations only go forward, and a database newer than this
Veena is refused. Several engines or migrations starting together on one
PostgreSQL database take turns.

With --check it changes nothing and says where the schema stands: the exit
status is 0 if it is current, 3 if migrations are due, 1 on an error
(among them a database newer than this Veena).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// As for serve: read here, so that --help never shows a
			// database password.
			if !cmd.Flags().Changed("db") {
				db = env("VEENA_DB", DefaultDB)
			}
			return migrate(cmd.Context(), db, check, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&db, "db", DefaultDB, "SQLite file path or PostgreSQL URL (postgres://…) (env VEENA_DB)")
	f.BoolVar(&check, "check", false, "change nothing: report the schema version (exit status 3 if migrations are due)")
	return cmd
}

// migrate migrates the database db names, or with check only reports on it.
func migrate(ctx context.Context, db string, check bool, out io.Writer) error {
	if db == "memory" || db == ":memory:" {
		return errors.New("veena migrate: --db memory keeps nothing, so it has no schema to migrate")
	}
	if check && !isPostgres(db) {
		// Opening a file that is not there would create it.
		if _, err := os.Stat(db); errors.Is(err, fs.ErrNotExist) {
			abs, _ := filepath.Abs(db)
			return fmt.Errorf("veena migrate: there is no database at %s", abs)
		}
	}
	st, where, err := openStore(ctx, db, storeTuning{})
	if err != nil {
		return fmt.Errorf("veena migrate: open the store %s: %w", where, err)
	}
	defer st.Close()
	sv, ok := st.(store.SchemaVersioner)
	if !ok {
		return fmt.Errorf("veena migrate: the store %s does not record a schema version", where)
	}
	cur, latest, err := sv.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("veena migrate: read the schema version of %s: %w", where, err)
	}
	switch {
	case cur > latest:
		return fmt.Errorf("veena migrate: %s has schema version %d, newer than this Veena knows (%d): upgrade Veena", where, cur, latest)
	case cur == latest:
		fmt.Fprintf(out, "%s is up to date (schema version %d)\n", where, cur)
		return nil
	case check:
		return &exitError{code: exitMigrationsDue, msg: fmt.Sprintf("%s has schema version %d and this Veena needs %d: run veena migrate to apply %d migration(s)", where, cur, latest, latest-cur)}
	}
	if err := st.Migrate(ctx, true); err != nil {
		return fmt.Errorf("veena migrate: %s: %w", where, err)
	}
	fmt.Fprintf(out, "%s migrated from schema version %d to %d\n", where, cur, latest)
	return nil
}
