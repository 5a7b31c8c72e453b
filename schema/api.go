package schema

import (
	"context"
	"fmt"
	"time"

	veena "github.com/veena-wf/veena"
	schemaformat "github.com/veena-wf/veena/format/schema"
	"github.com/veena-wf/veena/kernel"
)

// NodeInstance is one visit of a node, as the API shows it.
type NodeInstance struct {
	Node       string           `json:"node"`
	Kind       string           `json:"kind"`
	Token      string           `json:"token"`
	State      string           `json:"state"`
	StartedAt  time.Time        `json:"startedAt"`
	FinishedAt *time.Time       `json:"finishedAt"`
	Due        *time.Time       `json:"due,omitempty"`
	Event      *kernel.Message  `json:"event,omitempty"`
	Arc        string           `json:"arc,omitempty"`
	Error      string           `json:"error,omitempty"`
	Children   []string         `json:"children,omitempty"`
	Actions    []ActionInstance `json:"actions"`
}

// ActionInstance is one action of one visit, as the API shows it.
type ActionInstance struct {
	Name       string     `json:"name"`
	Do         string     `json:"do"`
	State      string     `json:"state"`
	Attempts   int        `json:"attempts"`
	StartedAt  *time.Time `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt"`
	Due        *time.Time `json:"due,omitempty"`
	Result     any        `json:"result"`
	Error      string     `json:"error,omitempty"`
}

// Instance is a schema instance's own state as the API shows it: its node
// instances in order and its queued events.
type Instance struct {
	Nodes   []NodeInstance    `json:"items"`
	Queue   []*kernel.Message `json:"queue"`
	Dropped int               `json:"dropped"`
	// Trimmed counts the oldest finished visits no longer kept (an
	// instance keeps its last 500 in detail).
	Trimmed int `json:"trimmed,omitempty"`
}

// ErrNotSchema: the process is not a schema instance.
var ErrNotSchema = &kernel.Error{Code: "not_a_schema_instance", Msg: "the process is not a schema instance"}

// Nodes returns a schema instance's node instances, one per visit in the
// order of the visits, each with its action instances, and the events it
// queues.
func (r *Runtime) Nodes(ctx context.Context, id string) (*Instance, error) {
	e, err := r.eng()
	if err != nil {
		return nil, err
	}
	var out *Instance
	err = e.Inspect(ctx, id, func(p *kernel.Process) error {
		if p.Graph.Format != schemaformat.Format {
			return &kernel.Error{Code: ErrNotSchema.Code, Msg: fmt.Sprintf("process %s runs %s, a %s definition, not a schema", id, p.Graph.Name, p.Graph.Format)}
		}
		st, err := stateOf(p)
		if err != nil {
			return err
		}
		out = &Instance{Nodes: make([]NodeInstance, 0, len(st.Nodes)), Queue: st.Queue, Dropped: st.Dropped, Trimmed: st.Trimmed}
		if out.Queue == nil {
			out.Queue = []*kernel.Message{}
		}
		for _, n := range st.Nodes {
			x := NodeInstance{Node: n.Node, Kind: n.Kind, Token: veena.NodeTokenID(p.ID, n.Token), State: n.State,
				StartedAt: n.StartedAt, FinishedAt: n.FinishedAt, Due: n.Due, Event: n.Event, Arc: n.Arc, Error: n.Error,
				Children: n.Children, Actions: make([]ActionInstance, len(n.Actions))}
			if p.State.IsCanceled() && (n.State == NodeWaiting || n.State == NodeRunning) {
				x.State = NodeCanceled
			}
			// A job action whose job failed for good: the work layer opened
			// an incident on the token; the visit waits for it.
			jobFailed := false
			if n.State == NodeRunning && n.Token < len(p.NodeTokens) && p.NodeTokens[n.Token].Holds(kernel.HoldsIncident) {
				x.State = NodeFailed
				jobFailed = true
				if x.Error == "" {
					x.Error = "its job failed: an incident is open"
				}
			}
			for i, a := range n.Actions {
				x.Actions[i] = ActionInstance{Name: a.Name, Do: a.Do, State: a.State, Attempts: a.Attempts,
					StartedAt: a.StartedAt, FinishedAt: a.FinishedAt, Due: a.Due, Result: a.Result, Error: a.Error}
				if x.State == NodeCanceled && a.State != ActionCompleted && a.State != ActionFailed {
					x.Actions[i].State = ActionCanceled
				}
				if jobFailed && a.State == ActionRunning {
					x.Actions[i].State = ActionFailed
				}
			}
			out.Nodes = append(out.Nodes, x)
		}
		return nil
	})
	return out, err
}

// Almanac returns a schema instance's almanac.
func (r *Runtime) Almanac(ctx context.Context, id string) (map[string]veena.Value, error) {
	e, err := r.eng()
	if err != nil {
		return nil, err
	}
	if err := r.isSchema(ctx, e, id); err != nil {
		return nil, err
	}
	return e.ProcessEnv(ctx, id)
}

// PatchAlmanac merges keys into a schema instance's almanac (nil removes
// one), as a command queued behind the instance's earlier ones.
func (r *Runtime) PatchAlmanac(ctx context.Context, id string, patch map[string]any, idempotencyKey string) (map[string]veena.Value, error) {
	e, err := r.eng()
	if err != nil {
		return nil, err
	}
	if err := r.isSchema(ctx, e, id); err != nil {
		return nil, err
	}
	return e.PatchProcessEnv(ctx, id, patch, idempotencyKey)
}

func (r *Runtime) isSchema(ctx context.Context, e *veena.Engine, id string) error {
	p, err := e.Process(ctx, id)
	if err != nil {
		return err
	}
	d, err := e.Definition(ctx, p.Definition, p.Version)
	if err != nil {
		return err
	}
	if d.Format != schemaformat.Format {
		return &kernel.Error{Code: ErrNotSchema.Code, Msg: fmt.Sprintf("process %s runs %s, a %s definition, not a schema", id, d.Name, d.Format)}
	}
	return nil
}
