package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/veena-wf/veena/internal/auth"
	"github.com/veena-wf/veena/server"
)

// newAccessTokenCmd manages the access tokens of the server (`veena
// access-token`), not to be confused with the node tokens of processes
// (`veena node-tokens`).
func newAccessTokenCmd() *cobra.Command {
	var db, file string
	cmd := &cobra.Command{
		Use:     "access-token",
		Aliases: []string{"access-tokens"},
		Short:   "Create, list and revoke access tokens, which let clients in (not node tokens)",
		Long: `Create, list and revoke the bearer tokens 'veena serve' accepts.

Roles: viewer (read everything), operator (also start, complete, backtrack and
cancel processes, change environments), admin (also load definitions).

Tokens are kept hashed (SHA-256) in a file, by default ` + TokenFileName + ` next
to the SQLite data file (--db), or in the working directory for PostgreSQL.
A running server notices changes within a second.`,
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", "the server's --db, to find the token file (env VEENA_DB; default "+DefaultDB+")")
	cmd.PersistentFlags().StringVar(&file, "tokens-file", env("VEENA_TOKENS_FILE", ""), "the token file (env VEENA_TOKENS_FILE)")
	path := func() string {
		if file != "" {
			return file
		}
		if db == "" {
			db = env("VEENA_DB", DefaultDB)
		}
		return defaultTokensFile(db)
	}

	var role, name, groups string
	create := &cobra.Command{
		Use:   "create --role ROLE --name NAME [--groups G1,G2]",
		Short: "Create an access token and print it (once: it is stored hashed)",
		Long: `Create an access token and print it (once: it is stored hashed).

The name is the user who acts with the token: tasks it claims, saves and
completes are that user's, and --groups are the groups the user is in (for
inboxes of candidate groups, "mine" and claiming).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := auth.ParseRole(role)
			if err != nil {
				return fmt.Errorf("veena access-token create: %w", err)
			}
			if name == "" {
				return fmt.Errorf("veena access-token create: --name is required (it names the token for listing and revoking)")
			}
			secret, err := auth.Create(path(), name, r, strings.Split(groups, ",")...)
			if err != nil {
				return fmt.Errorf("veena access-token create: %w", err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintln(out, secret)
			fmt.Fprintf(cmd.ErrOrStderr(), "Created %s token %q in %s. This is the only time it is shown;\nclients send it as VEENA_TOKEN or Authorization: Bearer <token>.\n", r, name, path())
			return nil
		},
	}
	create.Flags().StringVar(&role, "role", "", "viewer, operator or admin")
	create.Flags().StringVar(&name, "name", "", "a name for the token: the user who acts with it")
	create.Flags().StringVar(&groups, "groups", "", "the user's groups, comma-separated")

	var listOut outputFlag
	list := &cobra.Command{
		Use:   "list",
		Short: "List access tokens (names and roles, never the secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := listOut.check(); err != nil {
				return err
			}
			f, err := auth.ReadFile(path())
			if err != nil {
				return fmt.Errorf("veena access-token list: %w", err)
			}
			out := cmd.OutOrStdout()
			if listOut.format == "json" {
				type entry struct {
					Name    string    `json:"name"`
					Role    string    `json:"role"`
					Groups  []string  `json:"groups,omitempty"`
					Created time.Time `json:"createdAt"`
				}
				entries := []entry{}
				for _, e := range f.Tokens {
					entries = append(entries, entry{Name: e.Name, Role: e.Role, Groups: e.Groups, Created: e.CreatedAt})
				}
				return printJSON(out, entries)
			}
			if len(f.Tokens) == 0 {
				fmt.Fprintf(out, "No access tokens in %s: the server runs open, on loopback only.\n", path())
				return nil
			}
			tw := table(out)
			fmt.Fprintln(tw, "NAME\tROLE\tGROUPS\tCREATED")
			for _, e := range f.Tokens {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Name, e.Role, strings.Join(e.Groups, ","), stamp(e.CreatedAt))
			}
			return tw.Flush()
		},
	}

	listOut.add(list)

	revoke := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke an access token",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := auth.Revoke(path(), args[0]); err != nil {
				return fmt.Errorf("veena access-token revoke: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Revoked token %q\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

// newWhoamiCmd asks the server which role it gives the access token.
func newWhoamiCmd() *cobra.Command {
	cf := &clientFlags{}
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Show the role the server gives your access token",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			var me server.WhoAmI
			if err := c.getJSON(cmd.Context(), "/api/v1/whoami", nil, &me); err != nil {
				return err
			}
			if out.format == "json" {
				return printJSON(cmd.OutOrStdout(), me)
			}
			if me.Role == "open" {
				fmt.Fprintf(cmd.OutOrStdout(), "%s runs open (no access tokens): every request may do everything\n", c.base)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "token %q, role %s on %s\n", me.Name, me.Role, c.base)
			return nil
		},
	}
	cf.add(cmd)
	out.add(cmd)
	return cmd
}

// newOldTokenCmd keeps `veena token`, the old name of `veena access-token`,
// working for a while, hidden and saying so.
func newOldTokenCmd() *cobra.Command {
	cmd := newAccessTokenCmd()
	cmd.Use, cmd.Aliases, cmd.Hidden = "token", nil, true
	// The note goes to standard error: scripts read the secret that
	// create prints on standard output.
	cmd.PersistentPreRun = func(cmd *cobra.Command, args []string) {
		fmt.Fprintln(cmd.ErrOrStderr(), "veena: 'veena token' is now 'veena access-token' (access tokens; 'veena node-tokens' works on the node tokens of processes)")
	}
	return cmd
}
