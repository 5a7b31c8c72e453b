// Command veena is Veena's command line: `veena serve` runs the durable
// engine behind the HTTP API and the web console; the other commands are
// clients of that API (definitions, processes, tokens, events), manage access tokens
// (token), check and run definitions offline (check, run) and measure the
// server (bench).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// DefaultAddr is where `veena serve` listens unless told otherwise, and so
// the server the client commands talk to by default.
const DefaultAddr = "127.0.0.1:8080"

func main() {
	keepGCFloor()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line and returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(stderr, ee.msg)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, describe(err))
	return 1
}

// exitError ends the command with a status; msg was not printed yet.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// env returns the environment variable or def.
func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "veena",
		Short: "Veena, a durable workflow engine",
		Long: `Veena runs process definitions (Sarasvati graphs and more) durably.

  veena serve                          run the engine, the HTTP API and the web console
  veena migrate                        bring the database's schema up to date (serve does it at start)
  veena backup copy.db                 copy the SQLite database, also while serve runs
  veena definitions load order.wf.xml  load a definition into the running server
  veena processes start order          start a process
  veena events send --match order=o-1  deliver an event to the process whose context matches
  veena net event ID order customer=acme   send an event to a Petri net process; net fire, net marking
  veena check --analyse orders.pnml    explore a definition's state space (deadlocks, stuck joins, soundness)
  veena tasks list --mine              my inbox; tasks claim/save/complete work it
  veena worker --type T -- cmd …       run a shell command for every job of type T

Client commands talk to --url (VEENA_URL, default http://` + DefaultAddr + `)
with the access token --token (VEENA_TOKEN).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.CompletionOptions.HiddenDefaultCmd = true
	defer withUsage(root)
	root.AddCommand(
		newServeCmd(),
		newMigrateCmd(),
		newBackupCmd(),
		newDefinitionsCmd(),
		withRecord(newProcessesCmd()),
		newTokensCmd(),
		newArcTokensCmd(),
		newEventsCmd(),
		newMessagesCmd(),
		newSignalsCmd(),
		newSchemaCmd(),
		newNetCmd(),
		newTasksCmd(),
		newJobsCmd(),
		newIncidentsCmd(),
		newWorkerCmd(),
		newSubscriptionsCmd(),
		newDocumentsCmd(),
		newAccessTokenCmd(),
		newOldTokenCmd(),
		newWhoamiCmd(),
		newCheckCmd(),
		newRunCmd(),
		newBenchCmd(),
	)
	return root
}

// withUsage makes every command answer a wrong number of arguments, or a
// wrong flag, with its usage line, so that a person sees what it wants.
func withUsage(root *cobra.Command) {
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%s: %w\nUsage: %s\nRun '%s --help' for more.", cmd.CommandPath(), err, cmd.UseLine(), cmd.CommandPath())
	})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if args := c.Args; args != nil {
			c.Args = func(cmd *cobra.Command, a []string) error {
				if err := args(cmd, a); err != nil {
					return fmt.Errorf("%s: %w\nUsage: %s\nRun '%s --help' for more.", cmd.CommandPath(), err, cmd.UseLine(), cmd.CommandPath())
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// describe renders an error for a person.
func describe(err error) string {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.describe()
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "veena") {
		return msg
	}
	return "veena: " + msg
}
