package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
	veena "github.com/veena-wf/veena"
)

// The record of processes (audit trail, metrics, document, attachments)
// and the subscriptions that start processes from documents.

// inheritedClient makes a client from the --url and --token a parent
// command defines.
func inheritedClient(cmd *cobra.Command) (*client, error) {
	f := &clientFlags{}
	if fl := cmd.Flag("url"); fl != nil {
		f.url = fl.Value.String()
	}
	if fl := cmd.Flag("token"); fl != nil {
		f.token = fl.Value.String()
	}
	if f.url == "" {
		f.url = env("VEENA_URL", "http://"+DefaultAddr)
	}
	return f.client()
}

// withRecord adds audit, metrics, document and attach to the processes
// command.
func withRecord(procs *cobra.Command) *cobra.Command {
	addRecordCommands(procs)
	return procs
}

func addRecordCommands(procs *cobra.Command) {
	var auditOut outputFlag
	audit := &cobra.Command{
		Use:   "audit PROCESS_ID",
		Short: "Show a process's audit trail: who did what, when",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := auditOut.check(); err != nil {
				return err
			}
			c, err := inheritedClient(cmd)
			if err != nil {
				return err
			}
			var all []veena.AuditEntry
			id0, err := resolveProcess(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			q := url.Values{"limit": {"1000"}}
			for {
				var page veena.AuditPage
				if err := c.getJSON(cmd.Context(), "/api/v1/processes/"+url.PathEscape(id0)+"/audit", q, &page); err != nil {
					return err
				}
				all = append(all, page.Items...)
				if page.Next == "" {
					break
				}
				q.Set("after", page.Next)
			}
			if auditOut.format == "json" {
				return printJSON(cmd.OutOrStdout(), all)
			}
			tw := table(cmd.OutOrStdout())
			fmt.Fprintln(tw, "WHEN\tACTION\tNODE\tUSER\tDETAIL")
			for _, a := range all {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", stamp(a.At), a.Action, deref(a.Node), deref(a.User), deref(a.Detail))
			}
			return tw.Flush()
		},
	}
	auditOut.add(audit)

	var metricsOut outputFlag
	metrics := &cobra.Command{
		Use:   "metrics PROCESS_ID",
		Short: "Show how long each step of a process took",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := metricsOut.check(); err != nil {
				return err
			}
			c, err := inheritedClient(cmd)
			if err != nil {
				return err
			}
			var page veena.MetricPage
			id0, err := resolveProcess(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if err := c.getJSON(cmd.Context(), "/api/v1/processes/"+url.PathEscape(id0)+"/metrics", url.Values{"limit": {"1000"}}, &page); err != nil {
				return err
			}
			if metricsOut.format == "json" {
				return printJSON(cmd.OutOrStdout(), page.Items)
			}
			tw := table(cmd.OutOrStdout())
			fmt.Fprintln(tw, "NODE\tSTART\tFINISH\tDURATION\tSUCCESS")
			for _, m := range page.Items {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%dms\t%t\n", m.Node, stamp(m.Start), stamp(m.Finish), m.DurationMs, m.Success)
			}
			return tw.Flush()
		},
	}
	metricsOut.add(metrics)

	var asXML bool
	document := &cobra.Command{
		Use:   "document PROCESS_ID",
		Short: "Print a process's whole record (JSON, or MarkLogic's wf:process XML with --xml)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := inheritedClient(cmd)
			if err != nil {
				return err
			}
			id0, err := resolveProcess(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			path := "/api/v1/processes/" + url.PathEscape(id0) + "/document"
			if !asXML {
				var d veena.ProcessDocument
				if err := c.getJSON(cmd.Context(), path, nil, &d); err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), d)
			}
			hdr := http.Header{"Accept": {"application/xml"}}
			resp, err := c.send(cmd.Context(), http.MethodGet, path, nil, nil, "", hdr)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			_, err = io.Copy(cmd.OutOrStdout(), resp.Body)
			return err
		},
	}
	document.Flags().BoolVar(&asXML, "xml", false, "MarkLogic Workflow's wf:process XML")

	var card int
	var user string
	attach := &cobra.Command{
		Use:   "attach PROCESS_ID NAME [URI]",
		Short: "Set a named attachment of a process (no URI: an empty slot)",
		Args:  cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := inheritedClient(cmd)
			if err != nil {
				return err
			}
			body := map[string]any{"uri": "", "cardinality": card}
			if len(args) == 3 {
				body["uri"] = args[2]
			}
			if user != "" {
				body["user"] = user
			}
			var a veena.Attachment
			id0, err := resolveProcess(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if err := c.send2(cmd.Context(), http.MethodPut, "/api/v1/processes/"+url.PathEscape(id0)+"/attachments/"+url.PathEscape(args[1]), body, &a, ""); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s = %q (cardinality %d)\n", a.Name, a.URI, a.Cardinality)
			return nil
		},
	}
	attach.Flags().IntVar(&card, "cardinality", 1, "how many documents the attachment holds")
	attach.Flags().StringVar(&user, "user", env("VEENA_USER", ""), "the user who acts, on a server without access tokens (env VEENA_USER)")
	procs.AddCommand(audit, metrics, document, attach)
}

func newSubscriptionsCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "subscriptions",
		Short: "Subscriptions: start a process for every document a CEL condition matches",
	}
	cf.add(cmd)
	var definition, match string
	var version int
	create := &cobra.Command{
		Use:   "create NAME --definition D --match CEL",
		Short: "Make a subscription (the condition sees uri, collections and content)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			var s veena.Subscription
			body := map[string]any{"name": args[0], "definition": definition, "version": version, "match": match}
			if err := c.send2(cmd.Context(), http.MethodPost, "/api/v1/subscriptions", body, &s, ""); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "subscription %s starts %s for documents where %s\n", s.Name, s.Definition, s.Match)
			return nil
		},
	}
	create.Flags().StringVar(&definition, "definition", "", "the definition to start")
	create.Flags().IntVar(&version, "version", 0, "its version (default: the latest when a document arrives)")
	create.Flags().StringVar(&match, "match", "", `the CEL condition, e.g. '"orders" in collections && content.total > 100'`)
	list := &cobra.Command{
		Use:   "list",
		Short: "List subscriptions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			var page struct{ Items []veena.Subscription }
			if err := c.getJSON(cmd.Context(), "/api/v1/subscriptions", nil, &page); err != nil {
				return err
			}
			tw := table(cmd.OutOrStdout())
			fmt.Fprintln(tw, "NAME\tDEFINITION\tVERSION\tMATCH")
			for _, s := range page.Items {
				v := "latest"
				if s.Version > 0 {
					v = fmt.Sprint(s.Version)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, s.Definition, v, s.Match)
			}
			return tw.Flush()
		},
	}
	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "Remove a subscription",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			var s veena.Subscription
			if _, err := c.request(cmd.Context(), http.MethodDelete, "/api/v1/subscriptions/"+url.PathEscape(args[0]), nil, nil, "", nil, &s); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted subscription %s\n", s.Name)
			return nil
		},
	}
	cmd.AddCommand(create, list, del)
	return cmd
}

func newDocumentsCmd() *cobra.Command {
	cf := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "documents",
		Short: "Offer documents to the subscriptions",
	}
	cf.add(cmd)
	var collections []string
	var contentFile, key string
	submit := &cobra.Command{
		Use:   "submit URI [--collection C…] [--content FILE|-]",
		Short: "Offer a document: every subscription it matches starts a process referencing it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.client()
			if err != nil {
				return err
			}
			body := map[string]any{"uri": args[0], "collections": collections}
			if contentFile != "" {
				var b []byte
				if contentFile == "-" {
					b, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), 16<<20))
				} else {
					b, err = os.ReadFile(contentFile)
				}
				if err != nil {
					return fmt.Errorf("veena documents submit: %w", err)
				}
				if !json.Valid(b) {
					return fmt.Errorf("veena documents submit: %s is not JSON", contentFile)
				}
				body["content"] = json.RawMessage(b)
			}
			var res veena.DocumentResult
			if err := c.send2(cmd.Context(), http.MethodPost, "/api/v1/documents", body, &res, key); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(res.Started) == 0 && len(res.Errors) == 0 {
				fmt.Fprintln(out, "No subscription matched.")
			}
			for _, id := range res.Started {
				fmt.Fprintf(out, "started %s\n", id)
			}
			for _, e := range res.Errors {
				fmt.Fprintf(out, "subscription %s: %s\n", e.Subscription, e.Message)
			}
			if len(res.Errors) > 0 {
				return &exitError{code: 1, msg: strings.TrimSpace(fmt.Sprintf("veena: %d subscription(s) failed", len(res.Errors)))}
			}
			return nil
		},
	}
	submit.Flags().StringArrayVar(&collections, "collection", nil, "a collection of the document, repeatable")
	submit.Flags().StringVar(&contentFile, "content", "", "a JSON file with the document's content (- for stdin)")
	submit.Flags().StringVar(&key, "idempotency-key", "", "a key that makes a retry start nothing twice")
	cmd.AddCommand(submit)
	return cmd
}
