package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/duration"
	"github.com/veena-wf/veena/worker"
)

// The work layer's commands: tasks, jobs and incidents. They only call the
// HTTP API.

// actorFlags name the user a command acts as on a server without access
// tokens (with tokens, the token's user acts).
type actorFlags struct{ user, groups string }

func (a *actorFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&a.user, "user", env("VEENA_USER", ""), "the user who acts, on a server without access tokens (env VEENA_USER)")
	cmd.Flags().StringVar(&a.groups, "groups", env("VEENA_GROUPS", ""), "the user's groups, comma-separated (env VEENA_GROUPS)")
}

// body returns a request body naming the actor, plus extra fields.
func (a *actorFlags) body(extra map[string]any) map[string]any {
	b := map[string]any{}
	if a.user != "" {
		b["user"] = a.user
	}
	if g := splitList(a.groups); len(g) > 0 {
		b["groups"] = g
	}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

// send sends a JSON body with a method and decodes the answer.
func (c *client) send2(ctx context.Context, method, path string, in, out any, idem string) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	hdr := http.Header{}
	if idem != "" {
		hdr.Set("Idempotency-Key", idem)
	}
	_, err = c.request(ctx, method, path, nil, bytes.NewReader(b), "application/json", hdr, out)
	return err
}

// pairsEnv reads NAME=VALUE arguments as attribute values.
func pairsEnv(args []string) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for _, p := range args {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("veena: %q: want NAME=VALUE", p)
		}
		if v == "" {
			out[k] = json.RawMessage("null")
			continue
		}
		out[k] = envValue(v)
	}
	return out, nil
}

func opt(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

func printTasks(out io.Writer, items []veena.Task) error {
	tw := table(out)
	fmt.Fprintln(tw, "TASK\tLABEL\tSTATE\tHELD BY\tPRIORITY\tASSIGNEE\tCANDIDATES\tQUEUE\tDUE\tPROCESS")
	for _, t := range items {
		cands := append(append([]string{}, t.CandidateUsers...), prefixed("@", t.CandidateGroups)...)
		due := "-"
		if t.DueAt != nil {
			due = stamp(*t.DueAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Label, t.State, opt(t.ClaimedBy), t.Priority,
			opt(t.Assignee), strings.Join(cands, ","), opt(t.Queue), due, t.Process)
	}
	return tw.Flush()
}

func prefixed(p string, l []string) []string {
	out := make([]string, len(l))
	for i, x := range l {
		out[i] = p + x
	}
	return out
}

func printTask(out io.Writer, t *veena.Task) {
	fmt.Fprintf(out, "Task %s: %s\n", t.ID, t.Label)
	fmt.Fprintf(out, "  state:      %s\n", t.State)
	if t.ClaimedBy != nil {
		fmt.Fprintf(out, "  held by:    %s since %s\n", *t.ClaimedBy, stamp(*t.ClaimedAt))
	}
	fmt.Fprintf(out, "  process:    %s (%s)\n  node:       %s (token %s)\n  priority:   %d\n", t.Process, t.Definition, t.Node, t.NodeToken, t.Priority)
	if t.Assignee != nil {
		fmt.Fprintf(out, "  assignee:   %s\n", *t.Assignee)
	}
	if len(t.CandidateUsers) > 0 {
		fmt.Fprintf(out, "  candidates: %s\n", strings.Join(t.CandidateUsers, ", "))
	}
	if len(t.CandidateGroups) > 0 {
		fmt.Fprintf(out, "  groups:     %s\n", strings.Join(t.CandidateGroups, ", "))
	}
	if t.Queue != nil {
		fmt.Fprintf(out, "  queue:      %s\n", *t.Queue)
	}
	if t.DueAt != nil {
		fmt.Fprintf(out, "  due:        %s\n", stamp(*t.DueAt))
	}
	if t.FollowUpAt != nil {
		fmt.Fprintf(out, "  follow-up:  %s\n", stamp(*t.FollowUpAt))
	}
	fmt.Fprintf(out, "  created:    %s\n", stamp(t.CreatedAt))
	if t.CompletedAt != nil {
		fmt.Fprintf(out, "  ended:      %s by %s\n", stamp(*t.CompletedAt), opt(t.CompletedBy))
	}
	if len(t.Data) > 0 {
		fmt.Fprintln(out, "  data:")
		printEnv(out, "    ", t.Data)
	}
}

func newTasksCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "Human tasks: inboxes, claim, release, save for later, complete",
		Long: `Human tasks on the server.

A task is claimed (locked) by one user at a time: claim it, save its data for
later (keeping or releasing the lock), complete it with data and an outcome
(the arc to take). With access tokens the token's user acts; a server without
tokens takes the user from --user (VEENA_USER) and --groups (VEENA_GROUPS).

` + idHelp,
	}
	cf.add(cmd)

	var (
		lf                                                               actorFlags
		mine                                                             bool
		state, assignee, candUser, candGroup, queue, process, definition string
		limit                                                            int
		listOut                                                          outputFlag
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List tasks (open and claimed unless --state), highest priority first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := listOut.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			q := url.Values{}
			set := func(k, v string) {
				if v != "" {
					q.Set(k, v)
				}
			}
			set("state", state)
			set("assignee", assignee)
			set("candidateUser", candUser)
			set("candidateGroup", candGroup)
			set("queue", queue)
			pid, err := resolveOptionalProcess(cmd.Context(), c, process)
			if err != nil {
				return err
			}
			set("process", pid)
			set("definition", definition)
			if mine {
				q.Set("mine", "true")
				set("user", lf.user)
				set("groups", lf.groups)
			}
			if limit > 0 {
				q.Set("limit", strconv.Itoa(limit))
			}
			var page veena.TaskPage
			if err := c.getJSON(cmd.Context(), "/api/v1/tasks", q, &page); err != nil {
				return err
			}
			if listOut.format == "json" {
				return printJSON(cmd.OutOrStdout(), page)
			}
			if len(page.Items) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "No tasks.")
				return nil
			}
			return printTasks(cmd.OutOrStdout(), page.Items)
		},
	}
	lf.add(list)
	list.Flags().BoolVar(&mine, "mine", false, "only tasks assigned to, claimed by or offered to me or my groups")
	list.Flags().StringVar(&state, "state", "", "states, comma-separated: open, claimed, completed, canceled")
	list.Flags().StringVar(&assignee, "assignee", "", "only tasks assigned to this user")
	list.Flags().StringVar(&candUser, "candidate-user", "", "only tasks offered to this user")
	list.Flags().StringVar(&candGroup, "candidate-group", "", "only tasks offered to this group")
	list.Flags().StringVar(&queue, "queue", "", "only tasks in this queue")
	list.Flags().StringVar(&process, "process", "", "only tasks of this process (its id or a start of it only one process has)")
	list.Flags().StringVar(&definition, "definition", "", "only tasks of this definition")
	list.Flags().IntVar(&limit, "limit", 0, "at most this many (1-1000)")
	listOut.add(list)

	var showOut outputFlag
	show := &cobra.Command{
		Use:   "show TASK_ID",
		Short: "Show a task and its data",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := showOut.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			var t veena.Task
			id0, err := resolveTask(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if err := c.getJSON(cmd.Context(), "/api/v1/tasks/"+url.PathEscape(id0), nil, &t); err != nil {
				return err
			}
			if showOut.format == "json" {
				return printJSON(cmd.OutOrStdout(), t)
			}
			printTask(cmd.OutOrStdout(), &t)
			return nil
		},
	}
	showOut.add(show)

	lockCmd := func(verb, short string) *cobra.Command {
		var af actorFlags
		var o outputFlag
		c := &cobra.Command{
			Use:   verb + " TASK_ID",
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				if err := o.check(); err != nil {
					return err
				}
				cl, err := cf.client()
				if err != nil {
					return err
				}
				var t veena.Task
				id0, err := resolveTask(cmd.Context(), cl, args[0])
				if err != nil {
					return err
				}
				if err := cl.send2(cmd.Context(), http.MethodPost, "/api/v1/tasks/"+url.PathEscape(id0)+"/"+verb, af.body(nil), &t, ""); err != nil {
					return err
				}
				if o.format == "json" {
					return printJSON(cmd.OutOrStdout(), t)
				}
				holder := "nobody"
				if t.ClaimedBy != nil {
					holder = *t.ClaimedBy
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Task %s is %s, held by %s\n", t.ID, t.State, holder)
				return nil
			},
		}
		af.add(c)
		o.add(c)
		return c
	}
	claim := lockCmd("claim", "Lock a task for me (refused if another user holds it)")
	release := lockCmd("release", "Unlock a task I hold (an admin may unlock any)")

	var (
		sf       actorFlags
		release2 bool
		saveOut  outputFlag
	)
	save := &cobra.Command{
		Use:   "save TASK_ID [NAME=VALUE…]",
		Short: "Save a task's data for later, keeping the lock (or --release it)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := saveOut.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			data, err := pairsEnv(args[1:])
			if err != nil {
				return err
			}
			var t veena.Task
			id0, err := resolveTask(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if err := c.send2(cmd.Context(), http.MethodPatch, "/api/v1/tasks/"+url.PathEscape(id0), sf.body(map[string]any{"data": data, "release": release2}), &t, ""); err != nil {
				return err
			}
			if saveOut.format == "json" {
				return printJSON(cmd.OutOrStdout(), t)
			}
			printTask(cmd.OutOrStdout(), &t)
			return nil
		},
	}
	sf.add(save)
	save.Flags().BoolVar(&release2, "release", false, "release the lock after saving")
	saveOut.add(save)

	var (
		cfa     actorFlags
		outcome string
		key     string
		compOut outputFlag
	)
	complete := &cobra.Command{
		Use:   "complete TASK_ID [NAME=VALUE…]",
		Short: "Complete a task with data and an outcome; the process runs on",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := compOut.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			data, err := pairsEnv(args[1:])
			if err != nil {
				return err
			}
			extra := map[string]any{"data": data}
			if outcome != "" {
				extra["outcome"] = outcome
			}
			var p veena.Process
			id0, err := resolveTask(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if err := c.send2(cmd.Context(), http.MethodPost, "/api/v1/tasks/"+url.PathEscape(id0)+"/complete", cfa.body(extra), &p, key); err != nil {
				return err
			}
			return showProcess(cmd.Context(), c, cmd.OutOrStdout(), &p, compOut.format)
		},
	}
	cfa.add(complete)
	complete.Flags().StringVar(&outcome, "outcome", "", "the arc to take (default: the default arcs)")
	complete.Flags().StringVar(&key, "idempotency-key", "", "a key that makes a retry return the first result")
	compOut.add(complete)

	cmd.AddCommand(list, show, claim, release, save, complete)
	return cmd
}

func printJobs(out io.Writer, items []veena.Job) error {
	tw := table(out)
	fmt.Fprintln(tw, "JOB\tTYPE\tSTATE\tRETRIES\tWORKER\tLOCKED UNTIL\tNODE\tPROCESS")
	for _, j := range items {
		locked := "-"
		if j.LockedUntil != nil {
			locked = stamp(*j.LockedUntil)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", j.ID, j.Type, j.State, j.Retries, opt(j.Worker), locked, j.Node, j.Process)
	}
	return tw.Flush()
}

func newJobsCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "Jobs for worker programs: list, activate (lease), complete, fail, throw an error",
		Long:  "Jobs for worker programs: list, activate (lease), complete, fail, throw an error.\n\n" + idHelp,
	}
	cf.add(cmd)

	var typ, state, process string
	var listOut outputFlag
	list := &cobra.Command{
		Use:   "list",
		Short: "List jobs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := listOut.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			pid, err := resolveOptionalProcess(cmd.Context(), c, process)
			if err != nil {
				return err
			}
			q := url.Values{}
			for k, v := range map[string]string{"type": typ, "state": state, "process": pid} {
				if v != "" {
					q.Set(k, v)
				}
			}
			var page veena.JobPage
			if err := c.getJSON(cmd.Context(), "/api/v1/jobs", q, &page); err != nil {
				return err
			}
			if listOut.format == "json" {
				return printJSON(cmd.OutOrStdout(), page)
			}
			if len(page.Items) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "No jobs.")
				return nil
			}
			return printJobs(cmd.OutOrStdout(), page.Items)
		},
	}
	list.Flags().StringVar(&typ, "type", "", "types, comma-separated")
	list.Flags().StringVar(&state, "state", "", "states, comma-separated: open, leased, completed, failed, error_thrown, canceled")
	list.Flags().StringVar(&process, "process", "", "only jobs of this process (its id or a start of it only one process has)")
	listOut.add(list)

	show := &cobra.Command{
		Use:   "show JOB_ID",
		Short: "Show a job (as JSON)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			var j veena.Job
			id0, err := resolveJob(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if err := c.getJSON(cmd.Context(), "/api/v1/jobs/"+url.PathEscape(id0), nil, &j); err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), j)
		},
	}

	var aType, aWorker, lockFor, wait string
	var maxJobs int
	activate := &cobra.Command{
		Use:   "activate --type TYPE --worker NAME",
		Short: "Lease jobs of a type (as JSON); --wait long-polls for one",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			body := map[string]any{"type": aType, "worker": aWorker, "maxJobs": maxJobs}
			if lockFor != "" {
				body["lockFor"] = lockFor
			}
			if wait != "" {
				body["wait"] = wait
			}
			var res struct {
				Jobs []veena.Job `json:"jobs"`
			}
			if err := c.send2(cmd.Context(), http.MethodPost, "/api/v1/jobs/activate", body, &res, ""); err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), res)
		},
	}
	activate.Flags().StringVar(&aType, "type", "", "the job type")
	activate.Flags().StringVar(&aWorker, "worker", env("VEENA_WORKER", hostWorker()), "the worker's name (env VEENA_WORKER)")
	activate.Flags().IntVar(&maxJobs, "max", 1, "at most this many jobs")
	activate.Flags().StringVar(&lockFor, "lock-for", "", "lease duration (default 5m)")
	activate.Flags().StringVar(&wait, "wait", "", "wait this long for a job")

	var cWorker, result, cKey string
	var cOut outputFlag
	complete := &cobra.Command{
		Use:   "complete JOB_ID [NAME=VALUE…]",
		Short: "Complete a job I hold with variables and a result code",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cOut.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			envs, err := pairsEnv(args[1:])
			if err != nil {
				return err
			}
			body := map[string]any{"worker": cWorker, "env": envs}
			if result != "" {
				body["result"] = result
			}
			var p veena.Process
			id0, err := resolveJob(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if err := c.send2(cmd.Context(), http.MethodPost, "/api/v1/jobs/"+url.PathEscape(id0)+"/complete", body, &p, cKey); err != nil {
				return err
			}
			return showProcess(cmd.Context(), c, cmd.OutOrStdout(), &p, cOut.format)
		},
	}
	complete.Flags().StringVar(&cWorker, "worker", env("VEENA_WORKER", hostWorker()), "the worker holding the lease (env VEENA_WORKER)")
	complete.Flags().StringVar(&result, "result", "", "a result code choosing arcs")
	complete.Flags().StringVar(&cKey, "idempotency-key", "", "a key that makes a retry return the first result")
	cOut.add(complete)

	var fWorker, retryIn, message string
	var retries int
	fail := &cobra.Command{
		Use:   "fail JOB_ID",
		Short: "Report a failed attempt (--retries left, --retry-in back-off); at 0 retries an incident opens",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			body := map[string]any{"worker": fWorker, "message": message}
			if cmd.Flags().Changed("retries") {
				body["retries"] = retries
			}
			if retryIn != "" {
				body["retryIn"] = retryIn
			}
			var j veena.Job
			id0, err := resolveJob(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if err := c.send2(cmd.Context(), http.MethodPost, "/api/v1/jobs/"+url.PathEscape(id0)+"/fail", body, &j, ""); err != nil {
				return err
			}
			return printJobs(cmd.OutOrStdout(), []veena.Job{j})
		},
	}
	fail.Flags().StringVar(&fWorker, "worker", env("VEENA_WORKER", hostWorker()), "the worker holding the lease (env VEENA_WORKER)")
	fail.Flags().IntVar(&retries, "retries", 0, "retries left (default: one less)")
	fail.Flags().StringVar(&retryIn, "retry-in", "", "offer the job again after this long")
	fail.Flags().StringVar(&message, "message", "", "what went wrong")

	var eWorker, code, eMessage string
	throw := &cobra.Command{
		Use:   "error JOB_ID --code CODE [NAME=VALUE…]",
		Short: "Throw a business error at the job's node",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			envs, err := pairsEnv(args[1:])
			if err != nil {
				return err
			}
			var p veena.Process
			body := map[string]any{"worker": eWorker, "code": code, "message": eMessage, "env": envs}
			id0, err := resolveJob(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if err := c.send2(cmd.Context(), http.MethodPost, "/api/v1/jobs/"+url.PathEscape(id0)+"/error", body, &p, ""); err != nil {
				return err
			}
			return showProcess(cmd.Context(), c, cmd.OutOrStdout(), &p, "table")
		},
	}
	throw.Flags().StringVar(&eWorker, "worker", env("VEENA_WORKER", hostWorker()), "the worker holding the lease (env VEENA_WORKER)")
	throw.Flags().StringVar(&code, "code", "", "the error code")
	throw.Flags().StringVar(&eMessage, "message", "", "a message")

	cmd.AddCommand(list, show, activate, complete, fail, throw)
	return cmd
}

func newIncidentsCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "incidents",
		Short: "Incidents: problems holding a process until someone resolves them",
		Long:  "Incidents: problems holding a process until someone resolves them.\n\n" + idHelp,
	}
	cf.add(cmd)
	var process, state string
	var listOut outputFlag
	list := &cobra.Command{
		Use:   "list",
		Short: "List incidents (open unless --state)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := listOut.check(); err != nil {
				return err
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			q := url.Values{}
			pid, err := resolveOptionalProcess(cmd.Context(), c, process)
			if err != nil {
				return err
			}
			if pid != "" {
				q.Set("process", pid)
			}
			if state != "" {
				q.Set("state", state)
			}
			var page veena.IncidentPage
			if err := c.getJSON(cmd.Context(), "/api/v1/incidents", q, &page); err != nil {
				return err
			}
			if listOut.format == "json" {
				return printJSON(cmd.OutOrStdout(), page)
			}
			if len(page.Items) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "No incidents.")
				return nil
			}
			tw := table(cmd.OutOrStdout())
			fmt.Fprintln(tw, "INCIDENT\tKIND\tSTATE\tNODE\tJOB\tCREATED\tMESSAGE")
			for _, i := range page.Items {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", i.ID, i.Kind, i.State, i.Node, opt(i.Job), stamp(i.CreatedAt), i.Message)
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&process, "process", "", "only incidents of this process (its id or a start of it only one process has)")
	list.Flags().StringVar(&state, "state", "", "open (default) or resolved, comma-separated")
	listOut.add(list)

	var rf actorFlags
	var retries int
	resolve := &cobra.Command{
		Use:   "resolve INCIDENT_ID",
		Short: "Resolve an incident: a failed job is offered again (--retries), any other runs its step again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			extra := map[string]any{}
			if cmd.Flags().Changed("retries") {
				extra["retries"] = retries
			}
			var i veena.Incident
			id0, err := resolveIncident(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if err := c.send2(cmd.Context(), http.MethodPost, "/api/v1/incidents/"+url.PathEscape(id0)+"/resolve", rf.body(extra), &i, ""); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Incident %s is %s\n", i.ID, i.State)
			return nil
		},
	}
	rf.add(resolve)
	resolve.Flags().IntVar(&retries, "retries", 1, "retries of a failed job offered again")
	cmd.AddCommand(list, resolve)
	return cmd
}

// hostWorker is a worker name for this machine and process.
func hostWorker() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "worker"
	}
	return h + "-" + strconv.Itoa(os.Getpid())
}

func newWorkerCmd() *cobra.Command {
	cf := &clientFlags{}
	var (
		typ, name, lockFor string
		concurrency        int
	)
	cmd := &cobra.Command{
		Use:   "worker --type TYPE -- COMMAND [ARG…]",
		Short: "Do the jobs of a type by running a command for each",
		Long: `Lease the jobs of a type from the server and run COMMAND for each, until
interrupted (SIGINT or SIGTERM: no new job is leased, the running ones finish).

COMMAND gets the job's variables as a JSON object on its standard input, and
VEENA_JOB_ID, VEENA_JOB_TYPE, VEENA_PROCESS, VEENA_NODE, VEENA_NODE_TOKEN,
VEENA_RETRIES and every header as VEENA_HEADER_<NAME> in its environment.

Exit status 0 completes the job: standard output, if not blank, is a JSON
object of variables to merge into the process; its key "_result" is a result
code choosing arcs, and "_error": {"code": …, "message": …} throws a
business error instead. Any other exit status fails the job with the end of
standard error as the message: it is offered again after a back-off while
retries remain, then an incident opens. A command still running when its
lease ends is stopped and fails the same way: on Linux each command runs in a
process group of its own, and the whole group (the processes the command
started too) gets SIGTERM, then SIGKILL 5 seconds later.

A Petri net activity with several outputs reports intermediate results while
COMMAND runs: each line it writes to file descriptor 3 (VEENA_RESULTS_FD) is a
JSON object whose "_result" code fires the arcs that take it at once, the
other keys being variables; the job runs on until COMMAND exits.

  veena worker --type charge-card -- ./charge.sh
  veena worker --type ldap_search -- sh -c 'echo "{\"_result\": \"entry\"}" >&3; echo "{\"_result\": \"done\"}"'
  veena worker --type mail --concurrency 8 -- python3 send_mail.py`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if typ == "" {
				return fmt.Errorf("veena worker: --type is required")
			}
			if len(args) == 0 || cmd.ArgsLenAtDash() != 0 {
				return fmt.Errorf("veena worker: put the command after --: veena worker --type %s -- COMMAND", typ)
			}
			h, err := worker.Command(args)
			if err != nil {
				return fmt.Errorf("veena worker: %w", err)
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			var lock time.Duration
			if lockFor != "" {
				if lock, err = duration.ParseFixed(lockFor); err != nil {
					return fmt.Errorf("veena worker: --lock-for: %w", err)
				}
			}
			w, err := worker.New(worker.NewHTTP(c.base.String(), c.token), worker.Config{Type: typ, Name: name,
				Concurrency: concurrency, LockFor: lock, Logger: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))}, h)
			if err != nil {
				return fmt.Errorf("veena worker: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "veena worker %s: doing jobs of type %s from %s (%d at a time); interrupt to stop\n",
				w.Name(), typ, c.base, max(concurrency, 1))
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return w.Run(ctx)
		},
	}
	cf.add(cmd)
	cmd.Flags().StringVar(&typ, "type", "", "the job type")
	cmd.Flags().StringVar(&name, "name", env("VEENA_WORKER", hostWorker()), "the worker's name (env VEENA_WORKER)")
	cmd.Flags().IntVar(&concurrency, "concurrency", 1, "jobs run at once")
	cmd.Flags().StringVar(&lockFor, "lock-for", "", "lease of each job (default 5m): the longest a command may run")
	return cmd
}
