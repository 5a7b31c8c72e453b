package veena

import (
	"encoding/json"
	"time"

	"github.com/veena-wf/veena/kernel"
)

// Actor is who does something to a task: a user and the groups they are
// in. Admin may break another user's lock (release it).
type Actor struct {
	User   string
	Groups []string
	Admin  bool
}

// Task is a human task as the API shows it.
type Task struct {
	ID              string           `json:"id"`
	Process         string           `json:"process"`
	NodeToken       string           `json:"nodeToken"`
	Node            string           `json:"node"`
	Label           string           `json:"label"`
	Definition      string           `json:"definition"`
	State           string           `json:"state"`
	Assignee        *string          `json:"assignee"`
	CandidateUsers  []string         `json:"candidateUsers"`
	CandidateGroups []string         `json:"candidateGroups"`
	Queue           *string          `json:"queue"`
	ClaimedBy       *string          `json:"claimedBy"`
	ClaimedAt       *time.Time       `json:"claimedAt"`
	Priority        int              `json:"priority"`
	DueAt           *time.Time       `json:"dueAt"`
	FollowUpAt      *time.Time       `json:"followUpAt"`
	Data            map[string]Value `json:"data"`
	CreatedAt       time.Time        `json:"createdAt"`
	CompletedAt     *time.Time       `json:"completedAt"`
	CompletedBy     *string          `json:"completedBy"`
}

// TaskFilter selects tasks. States defaults to open and claimed. Mine
// selects the tasks assigned to, claimed by or offered to the actor or
// one of its groups.
type TaskFilter struct {
	States         []string
	Assignee       string
	CandidateUser  string
	CandidateGroup string
	Queue          string
	Process        string
	Definition     string
	Mine           bool
	Actor          Actor
	Limit          int
	After          string // cursor from the previous page's Next
}

// TaskPage is one page of tasks, highest priority first, then oldest.
type TaskPage struct {
	Items []Task `json:"items"`
	Next  string `json:"next"`
}

// Job is work for a worker program as the API shows it.
type Job struct {
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	Process      string            `json:"process"`
	NodeToken    string            `json:"nodeToken"`
	Node         string            `json:"node"`
	State        string            `json:"state"`
	Retries      int               `json:"retries"`
	Headers      map[string]string `json:"headers"`
	Env          map[string]Value  `json:"env"`
	Worker       *string           `json:"worker"`
	LockedUntil  *time.Time        `json:"lockedUntil"`
	DueAt        time.Time         `json:"dueAt"`
	CreatedAt    time.Time         `json:"createdAt"`
	ErrorMessage *string           `json:"errorMessage"`
}

// JobFilter selects jobs, by ID.
type JobFilter struct {
	Types   []string
	States  []string
	Process string
	Limit   int
	After   string
}

// JobPage is one page of jobs.
type JobPage struct {
	Items []Job  `json:"items"`
	Next  string `json:"next"`
}

// ActivateRequest asks for up to MaxJobs jobs of Type for Worker, leased
// for LockFor (default 5 minutes); with Wait, it waits up to that long for
// one to become available.
type ActivateRequest struct {
	Type    string
	Worker  string
	MaxJobs int
	LockFor time.Duration
	Wait    time.Duration
}

// Incident is a problem holding a node token, as the API shows it.
type Incident struct {
	ID         string     `json:"id"`
	Process    string     `json:"process"`
	NodeToken  string     `json:"nodeToken"`
	Node       string     `json:"node"`
	Job        *string    `json:"job"`
	Kind       string     `json:"kind"`
	Message    string     `json:"message"`
	State      string     `json:"state"`
	CreatedAt  time.Time  `json:"createdAt"`
	ResolvedAt *time.Time `json:"resolvedAt"`
}

// IncidentFilter selects incidents, by ID. States defaults to open.
type IncidentFilter struct {
	Process string
	States  []string
	Limit   int
	After   string
}

// IncidentPage is one page of incidents.
type IncidentPage struct {
	Items []Incident `json:"items"`
	Next  string     `json:"next"`
}

// Attachment is a named document reference of a process; an empty URI is
// a slot to fill later.
type Attachment struct {
	Name        string `json:"name"`
	URI         string `json:"uri"`
	Cardinality int    `json:"cardinality"`
}

// Work error codes.
var (
	// ErrTaskClaimed: another user holds the task's lock.
	ErrTaskClaimed = &kernel.Error{Code: "task_claimed", Msg: "the task is claimed by another user"}
	// ErrTaskNotOpen: the task is completed or canceled.
	ErrTaskNotOpen = &kernel.Error{Code: "task_not_open", Msg: "the task is not open"}
	// ErrJobNotLeased: the worker does not hold the job's lease.
	ErrJobNotLeased = &kernel.Error{Code: "job_not_leased", Msg: "the job is not leased to this worker"}
)

// jsonObject encodes attribute values as a JSON object ({} for none).
func jsonObject(m map[string]Value) []byte {
	if len(m) == 0 {
		return []byte("{}")
	}
	b, err := json.Marshal(m)
	if err != nil {
		// Values always encode; a failure is a bug.
		panic(err)
	}
	return b
}

// valuesFrom decodes a JSON object of attribute values (empty for none).
func valuesFrom(b []byte) (map[string]Value, error) {
	m := map[string]Value{}
	if len(b) == 0 || string(b) == "{}" {
		return m, nil
	}
	err := json.Unmarshal(b, &m)
	return m, err
}
