package deps
import (
 _ "github.com/jackc/pgx/v5/pgxpool"
 _ "modernc.org/sqlite"
 _ "github.com/dop251/goja"
 _ "github.com/spf13/cobra"
 _ "github.com/prometheus/client_golang/prometheus"
 _ "github.com/google/uuid"
 _ "github.com/google/go-cmp/cmp"
 _ "pgregory.net/rapid"
)
