package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/veena-wf/veena/schema"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/console"
	"github.com/veena-wf/veena/internal/auth"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/server"
	"github.com/veena-wf/veena/store"
)

var _ server.Engine = (*veena.Engine)(nil)

// DefaultDB is the SQLite file `veena serve` keeps its data in, in the
// working directory.
const DefaultDB = "veena.db"

// TokenFileName is the name of the access token file, kept next to the
// SQLite file (or in the working directory for PostgreSQL).
const TokenFileName = "veena-tokens.json"

type serveOptions struct {
	addr        string
	db          string
	definitions string
	tokensFile  string
	tokens      []string
	logLevel    string
	drain       time.Duration
	maxBody     int64
	tune        storeTuning
	// idempotencyTTL is --idempotency-ttl as given (see parseTTL).
	idempotencyTTL string
	// noMigrate refuses to start on a schema that is behind instead of
	// migrating it (veena migrate does it as a step of its own).
	noMigrate bool
	// uniqueContext are the context keys whose value one executing
	// process at a time may hold.
	uniqueContext []string
	// limits bound a command's work and a process's size; scriptTimeout
	// and scriptMemory a script node's run.
	limits        kernel.Limits
	scriptTimeout time.Duration
	scriptMemory  int64
}

func newServeCmd() *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the engine, the HTTP API and the web console",
		Long: `Run Veena: the durable engine behind the HTTP API (/api/v1), the web console (/)
and /healthz, /readyz, /metrics.

With no flags the data is kept in ./veena.db (SQLite) and the server listens on
` + DefaultAddr + `. Without access tokens the server runs open, and only on loopback;
create tokens with 'veena access-token create' (kept hashed in ` + TokenFileName + ` next to the
data file) or pass --token ROLE=SECRET.

SIGTERM or SIGINT stop accepting connections, let requests in flight finish
(up to --drain) and stop the engine.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Read here rather than as the flag's default, so that --help
			// never shows a database password.
			if !cmd.Flags().Changed("db") {
				o.db = env("VEENA_DB", DefaultDB)
			}
			if v := env("VEENA_NO_MIGRATE", ""); v != "" && !cmd.Flags().Changed("no-migrate") {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return fmt.Errorf("veena serve: VEENA_NO_MIGRATE=%q: want true or false", v)
				}
				o.noMigrate = b
			}
			return serve(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr(), nil)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", env("VEENA_ADDR", DefaultAddr), "host:port to listen on (env VEENA_ADDR)")
	f.StringVar(&o.addr, "listen", env("VEENA_ADDR", DefaultAddr), "same as --addr")
	_ = f.MarkHidden("listen")
	f.StringVar(&o.db, "db", DefaultDB, "SQLite file path, PostgreSQL URL (postgres://…) or \"memory\" (env VEENA_DB)")
	f.StringVar(&o.definitions, "definitions", env("VEENA_DEFINITIONS", ""), "directory of *.wf.xml definitions to load at start (env VEENA_DEFINITIONS)")
	f.StringVar(&o.tokensFile, "tokens-file", env("VEENA_TOKENS_FILE", ""), "access token file (env VEENA_TOKENS_FILE; default "+TokenFileName+" next to the SQLite file)")
	f.StringArrayVar(&o.tokens, "token", nil, "access token as ROLE=SECRET, repeatable (env VEENA_TOKENS, comma-separated)")
	f.StringVar(&o.logLevel, "log-level", env("VEENA_LOG_LEVEL", "info"), "debug, info, warn or error (env VEENA_LOG_LEVEL)")
	f.DurationVar(&o.drain, "drain", 30*time.Second, "how long to wait for requests in flight when stopping")
	f.Int64Var(&o.maxBody, "max-body", server.DefaultMaxBody, "request body limit in bytes")
	f.IntVar(&o.tune.groupCommit, "group-commit", 0, "how many concurrent commands may share one commit (default: 64 on SQLite, 1 (none) on PostgreSQL)")
	f.StringVar(&o.tune.synchronous, "sync", "", "SQLite's synchronous level: full (default; every commit reaches the disk) or normal (WAL: a power loss may lose the last commits)")
	f.StringVar(&o.idempotencyTTL, "idempotency-ttl", "7d", "how long a command's result is kept for retries with its idempotency key (a duration such as 72h or 30d, or \"forever\"); a retry after that runs the command again")
	f.StringArrayVar(&o.uniqueContext, "unique-context", nil, "a context key whose value one executing process at a time may hold: starting a second is a conflict (it binds processes started while it is set), repeatable (env VEENA_UNIQUE_CONTEXT, comma-separated)")
	d := kernel.DefaultLimits
	f.IntVar(&o.limits.CommandTokens, "max-command-tokens", d.CommandTokens, "node and arc tokens one command may create before it fails with budget_exceeded (a cycle of nodes that never wait); -1: no limit")
	f.DurationVar(&o.limits.CommandTime, "command-timeout", d.CommandTime, "how long one command may run before it fails with budget_exceeded; -1s: no limit")
	f.IntVar(&o.limits.ProcessTokens, "max-process-tokens", d.ProcessTokens, "node and arc tokens one process may hold (limit_exceeded); -1: no limit")
	f.IntVar(&o.limits.TokenSetMembers, "max-token-set", d.TokenSetMembers, "members one token set may have (limit_exceeded); -1: no limit")
	f.IntVar(&o.limits.NestingDepth, "max-nesting", d.NestingDepth, "how deep nested processes may nest (limit_exceeded); -1: no limit")
	f.DurationVar(&o.scriptTimeout, "script-timeout", 5*time.Second, "how long a script node may run; it is stopped then and its command fails")
	f.Int64Var(&o.scriptMemory, "script-memory", kernel.DefaultScriptMemory, "bytes a script node may allocate; beyond that it is stopped and its command fails")
	f.BoolVar(&o.noMigrate, "no-migrate", false, "refuse to start on a database whose schema is behind instead of migrating it (see veena migrate; env VEENA_NO_MIGRATE)")
	return cmd
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseTTL reads a lifetime given on the command line: a duration (72h,
// 90m), a whole number of days (30d), or "forever" (returned as -1, which
// veena.Options reads as no expiry). "" is the engine's default (0).
func parseTTL(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return 0, nil
	case strings.EqualFold(s, "forever"):
		return -1, nil
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n > math.MaxInt64/int64(24*time.Hour) {
			return 0, fmt.Errorf("%q: want a duration such as 72h or 30d, or \"forever\"", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q: want a duration such as 72h or 30d, or \"forever\"", s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: want a duration above zero (or \"forever\" to keep results for good)", s)
	}
	return d, nil
}

// isPostgres reports whether a --db value is a PostgreSQL URL.
func isPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// redact hides the password of a database URL.
func redact(db string) string {
	u, err := url.Parse(db)
	if err != nil {
		return "(an unreadable database URL)"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// defaultTokensFile is where the access tokens of a --db are kept.
func defaultTokensFile(db string) string {
	if isPostgres(db) || db == "memory" || db == ":memory:" {
		return TokenFileName
	}
	return filepath.Join(filepath.Dir(db), TokenFileName)
}

// serve runs the server until ctx ends. ready, if not nil, receives the
// base URL once the server accepts requests.
func serve(ctx context.Context, o *serveOptions, stdout, stderr io.Writer, ready chan<- string) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("veena serve: --log-level %q: want debug, info, warn or error", o.logLevel)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if o.tune.groupCommit < 0 {
		return fmt.Errorf("veena serve: --group-commit %d: want a number of commands from 1 (each commits alone), or 0 for the default", o.tune.groupCommit)
	}
	switch strings.ToLower(o.tune.synchronous) {
	case "", "full", "normal":
	default:
		return fmt.Errorf("veena serve: --sync %q: want full or normal", o.tune.synchronous)
	}

	ttl, err := parseTTL(o.idempotencyTTL)
	if err != nil {
		return fmt.Errorf("veena serve: --idempotency-ttl: %w", err)
	}

	if len(o.tokens) == 0 {
		o.tokens = splitList(env("VEENA_TOKENS", ""))
	}
	if len(o.uniqueContext) == 0 {
		o.uniqueContext = splitList(env("VEENA_UNIQUE_CONTEXT", ""))
	}
	for i, k := range o.uniqueContext {
		if o.uniqueContext[i] = strings.TrimSpace(k); o.uniqueContext[i] == "" {
			return errors.New("veena serve: --unique-context: want a context key, not an empty string")
		}
	}
	tokensFile := o.tokensFile
	if tokensFile == "" {
		tokensFile = defaultTokensFile(o.db)
	}
	authn, err := auth.NewAuthenticator(tokensFile, o.tokens)
	if err != nil {
		return fmt.Errorf("veena serve: %w", err)
	}
	authn.SetLogger(logger)
	if !authn.Configured() && !server.IsLoopbackAddr(o.addr) {
		return fmt.Errorf("veena serve: refusing to listen on %s without access tokens: an open server may listen on loopback only (e.g. --addr %s).\n  Create a token with `veena access-token create --role admin --name me` or pass --token ROLE=SECRET", o.addr, DefaultAddr)
	}

	st, where, err := openStore(ctx, o.db, o.tune)
	if err != nil {
		return fmt.Errorf("veena serve: open the store %s: %w", where, err)
	}
	// Schemas run on the same kernel; their registered actions would be
	// added here by a program embedding Veena (the CLI server has none, so
	// schemas served by it use built-in actions and jobs).
	k := kernel.New()
	k.ScriptTimeout, k.ScriptMemory = o.scriptTimeout, o.scriptMemory
	schemas := schema.New()
	schemas.Register(k)
	eng, err := veena.Open(ctx, veena.Options{Store: st, Kernel: k, Limits: o.limits, Logger: logger, DefinitionsDir: o.definitions, IdempotencyTTL: ttl, NoMigrate: o.noMigrate, UniqueContextKeys: o.uniqueContext})
	if err != nil {
		if sv, ok := st.(store.SchemaVersioner); ok && o.noMigrate && errors.Is(err, store.ErrSchema) {
			if cur, latest, verr := sv.SchemaVersion(ctx); verr == nil && cur < latest {
				err = fmt.Errorf("%w.\n  Run veena migrate with the same --db first, or start without --no-migrate", err)
			}
		}
		_ = st.Close()
		return fmt.Errorf("veena serve: %w", err)
	}
	defer eng.Close()
	if err := eng.Start(ctx); err != nil {
		return fmt.Errorf("veena serve: start the engine: %w", err)
	}
	defer eng.Stop()

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("veena serve: listen on %s: %w", o.addr, err)
	}
	loopback := server.IsLoopbackAddr(ln.Addr().String())
	if !loopback && !authn.Configured() {
		ln.Close()
		return fmt.Errorf("veena serve: refusing to listen on %s without access tokens", ln.Addr())
	}
	schemas.Attach(eng)
	srv := server.New(server.Config{
		Engine:   eng,
		Schemas:  schemas,
		Auth:     authn,
		Loopback: loopback,
		Console:  console.Handler(),
		Logger:   logger,
		MaxBody:  o.maxBody,
	})
	hs := server.HTTPServer(srv, logger)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	base := "http://" + displayAddr(ln.Addr().String())
	fmt.Fprintf(stdout, "Veena is serving on %s\n", base)
	fmt.Fprintf(stdout, "  data:    %s\n", where)
	if len(o.uniqueContext) > 0 {
		fmt.Fprintf(stdout, "  unique context keys: %s\n", strings.Join(o.uniqueContext, ", "))
	}
	fmt.Fprintf(stdout, "  console: %s/\n", base)
	fmt.Fprintf(stdout, "  api:     %s/api/v1 (OpenAPI: %s/api/v1/openapi.json)\n", base, base)
	if authn.Configured() {
		fmt.Fprintf(stdout, "  access:  bearer tokens required (token file %s)\n", tokensFile)
	} else {
		fmt.Fprintf(stdout, "  open: no access tokens configured, listening on loopback only\n")
	}
	if ready != nil {
		ready <- base
	}

	select {
	case err := <-served:
		return fmt.Errorf("veena serve: %w", err)
	case <-ctx.Done():
	}
	fmt.Fprintln(stdout, "Veena is stopping: finishing requests in flight")
	dctx, cancel := context.WithTimeout(context.Background(), o.drain)
	defer cancel()
	if err := hs.Shutdown(dctx); err != nil {
		logger.Warn("requests still running after the drain period were cut off", "err", err)
		_ = hs.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Warn("the HTTP server ended with an error", "err", err)
	}
	eng.Stop()
	if err := eng.Close(); err != nil {
		return fmt.Errorf("veena serve: close the store: %w", err)
	}
	fmt.Fprintln(stdout, "Veena stopped")
	return nil
}

// displayAddr is the listen address as a person would type it in a
// browser: the host name instead of a wildcard address.
func displayAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if host == "" || host == "::" || host == "0.0.0.0" {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	return net.JoinHostPort(host, port)
}
