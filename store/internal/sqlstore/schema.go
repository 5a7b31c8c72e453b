package sqlstore

import "github.com/veena-wf/veena/store"

// SchemaVersion reads a database's schema version for the SQL stores: 0 if
// exists finds no schema_version table (a database no Veena has migrated),
// else what read finds in it (0 for a table without its row: read answers
// 0 and no error then). latest is how many migrations the store knows. A
// failed query is returned as the database being unavailable to the store
// named what.
func SchemaVersion(what string, latest int, exists func() (bool, error), read func() (int, error)) (current, known int, err error) {
	ok, err := exists()
	if err == nil && ok {
		current, err = read()
	}
	if err != nil {
		return 0, latest, store.Unavailable(what+": read schema version", err)
	}
	return current, latest, nil
}
