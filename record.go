package veena

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/store"
)

// The record of a process, as MarkLogic Workflow keeps it in its process
// document: the audit trail, per-step metrics, attachments and data. It is
// not kept twice: the audit trail is the process's event log read with
// the audit notes commands leave (who did it, a detail), and the metrics are
// its token history; both stay after the process ends and survive
// restarts with the rest of the process.

// AuditEntry is one entry of a process's audit trail.
type AuditEntry struct {
	Seq      int64     `json:"seq"`
	At       time.Time `json:"at"`
	Category string    `json:"category"`
	Action   string    `json:"action"`
	Node     *string   `json:"node"`
	Label    *string   `json:"label"`
	User     *string   `json:"user"`
	Detail   *string   `json:"detail"`
}

// AuditPage is a page of the audit trail, oldest first.
type AuditPage struct {
	Items []AuditEntry `json:"items"`
	Next  string       `json:"next"`
}

// Metric is one finished node token of a process: when it started and
// finished, and whether it finished well (not cancelled, interrupted or
// backtracked).
type Metric struct {
	Node       string    `json:"node"`
	Label      string    `json:"label"`
	NodeToken  string    `json:"nodeToken"`
	Start      time.Time `json:"start"`
	Finish     time.Time `json:"finish"`
	DurationMs int64     `json:"durationMs"`
	Success    bool      `json:"success"`
}

// MetricPage is a page of metrics in the order the tokens finished.
type MetricPage struct {
	Items []Metric `json:"items"`
	Next  string   `json:"next"`
}

// ProcessDocument is the whole record of a process as one document.
type ProcessDocument struct {
	ID          string           `json:"id"`
	Definition  string           `json:"definition"`
	Version     int              `json:"version"`
	State       string           `json:"state"`
	Data        map[string]Value `json:"data"`
	Attachments []Attachment     `json:"attachments"`
	AuditTrail  []AuditEntry     `json:"auditTrail"`
	Metrics     []Metric         `json:"metrics"`
	Start       time.Time        `json:"start"`
	End         *time.Time       `json:"end"`
}

// auditActions maps the event types in the audit trail to their actions
// and categories; other events (arc tokens, a token's creation and
// acceptance…) are the token game's detail, not the record's.
var auditActions = map[string][2]string{
	"PROCESS_STARTED":        {"process_started", "process"},
	"PROCESS_COMPLETED":      {"process_completed", "process"},
	"PROCESS_CANCELED":       {"process_canceled", "process"},
	"NODE_TOKEN_COMPLETED":   {"step_completed", "step"},
	"NODE_TOKEN_BACKTRACKED": {"backtracked", "step"},
	"TASK_CREATED":           {"task_created", "task"},
	"TASK_CLAIMED":           {"task_claimed", "task"},
	"TASK_RELEASED":          {"task_released", "task"},
	"TASK_SAVED":             {"task_saved", "task"},
	"TASK_COMPLETED":         {"task_completed", "task"},
	"JOB_CREATED":            {"job_created", "job"},
	"JOB_COMPLETED":          {"job_completed", "job"},
	"JOB_FAILED":             {"job_failed", "job"},
	"JOB_ERROR_THROWN":       {"job_error", "job"},
	"INCIDENT_OPENED":        {"incident_opened", "incident"},
	"INCIDENT_RESOLVED":      {"incident_resolved", "incident"},
	"ENV_CHANGED":            {"env_changed", "data"},
	"ATTACHMENT_SET":         {"attachment_set", "data"},
	"MESSAGE_CORRELATED":     {"message_correlated", "message"},
	"TRANSITION_FIRED":       {"transition_fired", "step"},
	"ACTION_COMPLETED":       {"action_completed", "step"},
}

// startRecord records what a start command knows beyond the token game:
// who started the process, and its attachments.
func (c *cmd) startRecord(p *kernel.Process, user string, atts []Attachment) {
	for _, a := range atts {
		row := store.Attachment{Process: p.ID, Name: a.Name, URI: a.URI, Cardinality: a.Cardinality}
		c.write(func(ctx context.Context, tx store.Tx) error { x := row; return tx.PutAttachment(ctx, &x) })
	}
	if user == "" && len(atts) == 0 {
		return
	}
	seq := int64(0)
	for i := range p.Events {
		if p.Events[i].EventType() == kernel.ProcessStarted {
			seq = p.Event(i).Seq
			break
		}
	}
	detail := ""
	if len(atts) > 0 {
		names := make([]string, len(atts))
		for i, a := range atts {
			names[i] = a.Name
		}
		detail = "attachments: " + strings.Join(names, ", ")
	}
	if seq > 0 {
		c.note(p.ID, seq, user, detail)
	}
}

// checkAttachments checks attachments given to a command; a cardinality
// of 0 becomes 1.
func checkAttachments(atts []Attachment) ([]Attachment, error) {
	out := make([]Attachment, 0, len(atts))
	seen := map[string]bool{}
	for _, a := range atts {
		a.Name = strings.TrimSpace(a.Name)
		switch {
		case a.Name == "":
			return nil, invalid("an attachment needs a name")
		case len(a.Name) > 200 || len(a.URI) > 4000:
			return nil, invalid("attachment %.40q: name or uri too long", a.Name)
		case seen[a.Name]:
			return nil, invalid("attachment %q is given twice", a.Name)
		case a.Cardinality < 0:
			return nil, invalid("attachment %q: cardinality %d must not be negative", a.Name, a.Cardinality)
		}
		if a.Cardinality == 0 {
			a.Cardinality = 1
		}
		seen[a.Name] = true
		out = append(out, a)
	}
	return out, nil
}

// Attachments returns a process's attachments by name.
func (e *Engine) Attachments(ctx context.Context, processID string) ([]Attachment, error) {
	if _, err := e.store.Process(ctx, processID); err != nil {
		return nil, storeError("read process", err)
	}
	rows, err := e.store.Attachments(ctx, processID)
	if err != nil {
		return nil, storeError("read attachments", err)
	}
	out := make([]Attachment, len(rows))
	for i, r := range rows {
		out[i] = Attachment{Name: r.Name, URI: r.URI, Cardinality: r.Cardinality}
	}
	return out, nil
}

// SetAttachment sets (adds or replaces) a named attachment of a process,
// as user, in a command of its own (ATTACHMENT_SET).
func (e *Engine) SetAttachment(ctx context.Context, processID string, a Attachment, user, idempotencyKey string) (*Attachment, error) {
	atts, err := checkAttachments([]Attachment{a})
	if err != nil {
		return nil, err
	}
	a = atts[0]
	o := &op{Kind: opAttachment, Process: processID, Args: &workArgs{Name: a.Name, URI: a.URI, Card: a.Cardinality, User: user}}
	out, err := e.submit(ctx, o, idempotencyKey)
	if err != nil {
		return nil, err
	}
	if err := out.err(); err != nil {
		return nil, err
	}
	return out.Attachment, nil
}

// nodeInfo is the node and label of a token of a process.
func nodeInfo(p *kernel.Process, token int) (name, label string, ok bool) {
	if token < 0 || token >= len(p.NodeTokens) {
		return "", "", false
	}
	n := p.NodeTokens[token].Node
	label = n.Label
	if label == "" {
		label = n.Name
	}
	return n.QualifiedName(), label, true
}

func optStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Audit returns a page of a process's audit trail, oldest first, after the
// cursor of the previous page.
func (e *Engine) Audit(ctx context.Context, processID, after string, limit int) (*AuditPage, error) {
	limit = pageLimit(limit)
	var from int64
	if after != "" {
		n, err := strconv.ParseInt(after, 10, 64)
		if err != nil || n < 0 {
			return nil, invalid("after %q is not a cursor of this list", after)
		}
		from = n
	}
	p, err := e.decodeOne(ctx, processID)
	if err != nil {
		return nil, err
	}
	entries, next, err := e.audit(ctx, p, from, limit)
	if err != nil {
		return nil, err
	}
	page := &AuditPage{Items: entries}
	if next > 0 {
		page.Next = strconv.FormatInt(next, 10)
	}
	return page, nil
}

// audit reads up to limit entries of p's audit trail after event seq from
// (no bound if limit <= 0), and the cursor after the last one if more
// entries may follow.
func (e *Engine) audit(ctx context.Context, p *kernel.Process, from int64, limit int) ([]AuditEntry, int64, error) {
	out := []AuditEntry{}
	const chunk = 500
	for {
		evs, err := e.store.Events(ctx, p.ID, from, chunk)
		if err != nil {
			return nil, 0, storeError("read events", err)
		}
		if len(evs) == 0 {
			return out, 0, nil
		}
		notes, err := e.store.AuditNotes(ctx, p.ID, from, 0)
		if err != nil {
			return nil, 0, storeError("read audit notes", err)
		}
		bySeq := make(map[int64]store.AuditNote, len(notes))
		for _, n := range notes {
			if n.Seq <= evs[len(evs)-1].Seq {
				bySeq[n.Seq] = n
			}
		}
		for _, ev := range evs {
			from = ev.Seq
			act, ok := auditActions[ev.Type]
			if !ok {
				continue
			}
			if limit > 0 && len(out) == limit {
				return out, out[len(out)-1].Seq, nil
			}
			entry := AuditEntry{Seq: ev.Seq, At: ev.At, Action: act[0], Category: act[1]}
			if name, label, ok := nodeInfo(p, ev.NodeToken); ok {
				entry.Node, entry.Label = &name, &label
			}
			if n, ok := bySeq[ev.Seq]; ok {
				entry.User, entry.Detail = optStr(n.User), optStr(n.Detail)
			}
			if ev.Type == "NODE_TOKEN_COMPLETED" && ev.NodeToken >= 0 && ev.NodeToken < len(p.NodeTokens) &&
				p.NodeTokens[ev.NodeToken].ExecType != kernel.Forward && p.NodeTokens[ev.NodeToken].ExecType != kernel.ForwardBacktracked {
				continue // a token a backtrack made and completed: bookkeeping, not a step
			}
			out = append(out, entry)
		}
		if len(evs) < chunk {
			return out, 0, nil
		}
	}
}

// Metrics returns a page of a process's metrics: one per node token that
// finished, in the order they finished.
func (e *Engine) Metrics(ctx context.Context, processID, after string, limit int) (*MetricPage, error) {
	limit = pageLimit(limit)
	skip := 0
	if after != "" {
		n, err := strconv.Atoi(after)
		if err != nil || n < 0 {
			return nil, invalid("after %q is not a cursor of this list", after)
		}
		skip = n
	}
	p, err := e.decodeOne(ctx, processID)
	if err != nil {
		return nil, err
	}
	all := metricsOf(p)
	page := &MetricPage{Items: []Metric{}}
	if skip < len(all) {
		end := min(len(all), skip+limit)
		page.Items = all[skip:end]
		if end < len(all) {
			page.Next = strconv.Itoa(end)
		}
	}
	return page, nil
}

// metricsOf lists p's finished node tokens. Tokens a backtrack made to
// stand for others are left out; a backtracked token, one completed on no
// arc of a node that has some (interrupted), and the tokens still active
// when the process was cancelled finish without success.
func metricsOf(p *kernel.Process) []Metric {
	type done struct {
		t   *kernel.NodeToken
		at  time.Time
		seq int64
		ok  bool
	}
	var list []done
	for _, t := range p.NodeTokens {
		if t.ExecType != kernel.Forward && t.ExecType != kernel.ForwardBacktracked {
			continue
		}
		switch {
		case t.Complete:
			ok := t.ExecType == kernel.Forward && (len(t.Children) > 0 || len(t.Node.OutArcs()) == 0 || t.GuardAction == kernel.Discard)
			list = append(list, done{t, t.CompletedAt(), t.CompleteSeq, ok})
		case p.State == kernel.Canceled:
			list = append(list, done{t, p.UpdatedAt, 1 << 62, false})
		}
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].seq < list[j].seq })
	out := make([]Metric, len(list))
	for i, d := range list {
		name, label, _ := nodeInfo(p, d.t.ID)
		out[i] = Metric{Node: name, Label: label, NodeToken: nodeTokenID(p.ID, d.t.ID), Start: d.t.CreatedAt(), Finish: d.at,
			DurationMs: d.at.Sub(d.t.CreatedAt()).Milliseconds(), Success: d.ok}
	}
	return out
}

// Document returns the whole record of a process.
func (e *Engine) Document(ctx context.Context, processID string) (*ProcessDocument, error) {
	p, err := e.decodeOne(ctx, processID)
	if err != nil {
		return nil, err
	}
	atts, err := e.Attachments(ctx, processID)
	if err != nil {
		return nil, err
	}
	trail, _, err := e.audit(ctx, p, 0, 0)
	if err != nil {
		return nil, err
	}
	d := &ProcessDocument{ID: p.ID, Definition: p.Graph.Name, Version: p.Graph.Version, State: p.State.String(),
		Data: p.Env.Map(), Attachments: atts, AuditTrail: trail, Metrics: metricsOf(p), Start: p.CreatedAt}
	if d.Data == nil {
		d.Data = map[string]Value{}
	}
	if p.State == kernel.Completed || p.State == kernel.Canceled {
		end := p.UpdatedAt
		d.End = &end
	}
	return d, nil
}

// WorkflowNamespace is the namespace of MarkLogic Workflow's process
// documents.
const WorkflowNamespace = "http://marklogic.com/workflow"

// XML renders the document as MarkLogic Workflow's wf:process.
func (d *ProcessDocument) XML() []byte {
	var b bytes.Buffer
	b.WriteString(xml.Header)
	fmt.Fprintf(&b, `<wf:process id="%s" xmlns:wf="%s">`+"\n", esc(d.ID), WorkflowNamespace)
	b.WriteString("  <wf:data>\n")
	keys := make([]string, 0, len(d.Data))
	for k := range d.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := xmlValue(d.Data[k])
		if isXMLName(k) {
			fmt.Fprintf(&b, "    <%s>%s</%s>\n", k, esc(v), k)
		} else {
			// A name that is no XML element name keeps its name in an attribute.
			fmt.Fprintf(&b, "    <wf:attribute name=\"%s\">%s</wf:attribute>\n", esc(k), esc(v))
		}
	}
	b.WriteString("  </wf:data>\n  <wf:attachments>\n")
	for _, a := range d.Attachments {
		fmt.Fprintf(&b, "    <wf:attachment name=\"%s\" uri=\"%s\" cardinality=\"%d\"/>\n", esc(a.Name), esc(a.URI), a.Cardinality)
	}
	b.WriteString("  </wf:attachments>\n  <wf:audit-trail>\n")
	for _, a := range d.AuditTrail {
		detail := deref(a.Detail)
		if a.User != nil {
			detail = strings.TrimSpace("by " + *a.User + "; " + detail)
			detail = strings.TrimSuffix(detail, ";")
		}
		fmt.Fprintf(&b, "    <wf:audit>\n      <wf:when>%s</wf:when>\n      <wf:category>%s</wf:category>\n      <wf:state>%s</wf:state>\n      <wf:description>%s</wf:description>\n      <wf:detail>%s</wf:detail>\n    </wf:audit>\n",
			a.At.UTC().Format(time.RFC3339Nano), esc(a.Category), esc(deref(a.Node)), esc(a.Action), esc(detail))
	}
	b.WriteString("  </wf:audit-trail>\n  <wf:metrics>\n")
	for _, m := range d.Metrics {
		fmt.Fprintf(&b, "    <wf:metric>\n      <wf:state>%s</wf:state>\n      <wf:start>%s</wf:start>\n      <wf:finish>%s</wf:finish>\n      <wf:duration>%s</wf:duration>\n      <wf:success>%t</wf:success>\n    </wf:metric>\n",
			esc(m.Node), m.Start.UTC().Format(time.RFC3339Nano), m.Finish.UTC().Format(time.RFC3339Nano), xsDuration(m.Finish.Sub(m.Start)), m.Success)
	}
	b.WriteString("  </wf:metrics>\n")
	fmt.Fprintf(&b, "  <wf:process-definition-name>%s</wf:process-definition-name>\n", esc(fmt.Sprintf("%s__%d__0", d.Definition, d.Version)))
	if d.End != nil {
		fmt.Fprintf(&b, "  <wf:end>%s</wf:end>\n", d.End.UTC().Format(time.RFC3339Nano))
	}
	b.WriteString("</wf:process>\n")
	return b.Bytes()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// xmlValue is an attribute value as element text: strings as they are,
// dates in RFC 3339, numbers and booleans as JSON writes them, arrays and
// objects as JSON.
func xmlValue(v Value) string {
	switch v.Kind() {
	case kernel.KindString:
		return v.Str()
	case kernel.KindDate:
		d, _ := v.DateValue()
		return d.UTC().Format(time.RFC3339Nano)
	}
	b, _ := v.MarshalJSON()
	return string(b)
}

// isXMLName reports whether s is an XML element name without a prefix.
func isXMLName(s string) bool {
	if s == "" || strings.HasPrefix(strings.ToLower(s), "xml") {
		return false
	}
	for i, r := range s {
		letter := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if i == 0 && !letter {
			return false
		}
		if !letter && !(r >= '0' && r <= '9') && r != '-' && r != '.' {
			return false
		}
	}
	return true
}

// xsDuration writes a duration as xs:duration (PT1.5S).
func xsDuration(d time.Duration) string {
	if d < 0 {
		return "-" + xsDuration(-d)
	}
	s := strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
	return "PT" + s + "S"
}
