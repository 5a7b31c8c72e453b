package store

import (
	"context"
	"time"
)

// The work layer's rows, beside the processes: human tasks, jobs for
// worker programs, incidents, the audit notes of the process record,
// attachments, and the subscriptions that start processes from documents.
// Commands write them in their transaction (Tx); claims, saves and
// completions are commands too, serialised per process tree. Only job
// activation (ActivateJobs, ExpireLeases) changes rows outside a command:
// it leases jobs of many processes at once.
//
// Task, job and incident rows carry a revision, Rev, counted up by every
// write. A write of a row read earlier names the revision it read, and
// fails with ErrStale if the row changed meanwhile: the command then runs
// again on what is stored.

// Task states.
const (
	TaskOpen      = "open"
	TaskClaimed   = "claimed"
	TaskCompleted = "completed"
	TaskCanceled  = "canceled"
)

// Job states.
const (
	JobOpen        = "open"
	JobLeased      = "leased"
	JobCompleted   = "completed"
	JobFailed      = "failed"
	JobErrorThrown = "error_thrown"
	JobCanceled    = "canceled"
)

// Incident states.
const (
	IncidentOpen     = "open"
	IncidentResolved = "resolved"
)

// The id of a task, job or incident begins with the id of its process and
// a dot (the engine writes "<process>.t<seq>", ".j", ".i"): a store may
// find a process's work rows by that range of ids (SQLite does) instead of
// keeping an index by process.

// Task is a human task on a node token.
type Task struct {
	ID              string
	Process         string
	Token           int // the node token's index in its process
	Node            string
	Label           string
	Definition      string
	State           string
	Assignee        string
	CandidateUsers  []string
	CandidateGroups []string
	Queue           string
	ClaimedBy       string
	ClaimedAt       time.Time
	Priority        int
	DueAt           time.Time
	FollowUpAt      time.Time
	Data            []byte // JSON object: the task's data now
	Initial         []byte // JSON object: its data when it was created
	CreatedAt       time.Time
	CompletedAt     time.Time
	CompletedBy     string
	Rev             int64
}

// Job is work offered to worker programs of a type, on a node token.
type Job struct {
	ID           string
	Process      string
	Token        int
	Node         string
	Definition   string
	Type         string
	State        string
	Retries      int
	Headers      []byte // JSON object of strings
	Env          []byte // JSON object: the variables the worker gets
	Worker       string // the worker holding (or that last held) its lease
	LockedUntil  time.Time
	DueAt        time.Time // not offered before (a retry's back-off)
	CreatedAt    time.Time
	ErrorMessage string
	Rev          int64
}

// Incident is a problem that holds a node token until it is resolved.
type Incident struct {
	ID         string
	Process    string
	Token      int
	Node       string
	Definition string
	Job        string // the job whose failure it is, if any
	Kind       string
	Message    string
	State      string
	CreatedAt  time.Time
	ResolvedAt time.Time
	Rev        int64
}

// AuditNote is what the event log does not say about an event of a
// process: who caused it and a detail. The audit trail is the event log
// read with these notes.
type AuditNote struct {
	Process string
	Seq     int64 // the event's sequence number
	User    string
	Detail  string
}

// Attachment is a named document reference of a process.
type Attachment struct {
	Process     string
	Name        string
	URI         string
	Cardinality int
}

// Subscription starts a process of a definition for every document that
// matches its condition.
type Subscription struct {
	Name       string
	Definition string
	Version    int // 0: the latest when a document arrives
	Match      string
	CreatedAt  time.Time
}

// TaskCursor is where a page of tasks ends: tasks come highest priority
// first, then oldest, then by ID.
type TaskCursor struct {
	Priority  int
	CreatedAt time.Time
	ID        string
}

// TaskFilter selects tasks. Empty fields select everything.
type TaskFilter struct {
	States         []string
	Assignee       string
	CandidateUser  string
	CandidateGroup string
	Queue          string
	Process        string
	Definition     string
	// Mine selects the tasks assigned to, claimed by or offered to User or
	// one of Groups (as candidate user or group).
	Mine   bool
	User   string
	Groups []string
	After  *TaskCursor
	Limit  int
}

// JobFilter selects jobs, ordered by ID.
type JobFilter struct {
	Types   []string
	States  []string
	Process string
	After   string
	Limit   int
}

// IncidentFilter selects incidents, ordered by ID.
type IncidentFilter struct {
	Process string
	States  []string
	After   string
	Limit   int
}

// Activation asks for jobs of a type for a worker: up to Max jobs that are
// open and due at Now, or whose lease ran out by Now, leased until
// Now+LockFor.
type Activation struct {
	Type    string
	Worker  string
	Max     int
	Now     time.Time
	LockFor time.Duration
}

// WorkCounts are the work waiting, for metrics.
type WorkCounts struct {
	Tasks     map[string]int // open and claimed tasks, by state
	Jobs      map[JobKey]int // open, leased and failed jobs by type and state
	Incidents map[string]int // open incidents by kind
}

// JobKey is a job type and state.
type JobKey struct{ Type, State string }

// WorkStore is the part of Store that reads and leases work rows.
type WorkStore interface {
	// Task reads a task; ErrNotFound if absent.
	Task(ctx context.Context, id string) (*Task, error)
	// Tasks lists tasks, highest priority first, then oldest.
	Tasks(ctx context.Context, f TaskFilter) ([]*Task, error)
	// Job reads a job; ErrNotFound if absent.
	Job(ctx context.Context, id string) (*Job, error)
	// Jobs lists jobs by ID.
	Jobs(ctx context.Context, f JobFilter) ([]*Job, error)
	// ActivateJobs leases up to a.Max available jobs of a.Type to
	// a.Worker, oldest due first; concurrent activations never lease one
	// job twice. Each leased job's Rev goes up.
	ActivateJobs(ctx context.Context, a Activation) ([]*Job, error)
	// ExpireLeases makes the leased jobs whose lease ran out by now open
	// again (keeping the worker that held them) and returns their types.
	ExpireLeases(ctx context.Context, now time.Time) ([]string, error)
	// Incident reads an incident; ErrNotFound if absent.
	Incident(ctx context.Context, id string) (*Incident, error)
	// Incidents lists incidents by ID.
	Incidents(ctx context.Context, f IncidentFilter) ([]*Incident, error)
	// AuditNotes returns up to limit notes of a process with Seq > after,
	// in Seq order (no bound if limit <= 0).
	AuditNotes(ctx context.Context, process string, after int64, limit int) ([]AuditNote, error)
	// Attachments returns the attachments of a process by name.
	Attachments(ctx context.Context, process string) ([]Attachment, error)
	// PutSubscription stores a new subscription; ErrConflict if its name
	// is taken.
	PutSubscription(ctx context.Context, s *Subscription) error
	// Subscription reads one; ErrNotFound if absent.
	Subscription(ctx context.Context, name string) (*Subscription, error)
	// Subscriptions lists them by name.
	Subscriptions(ctx context.Context) ([]*Subscription, error)
	// DeleteSubscription removes one; ErrNotFound if absent.
	DeleteSubscription(ctx context.Context, name string) error
	// WorkCounts counts the work waiting.
	WorkCounts(ctx context.Context) (*WorkCounts, error)
}

// JobNotices is implemented by stores that several engines share (the
// PostgreSQL store): an engine tells the others that jobs became
// available, so that their long-polling activations wake at once rather
// than at their next look. Notices may be merged, delayed or, while the
// database cannot be reached, lost: activations keep looking now and then.
type JobNotices interface {
	// AnnounceJobs tells the other engines that jobs became available,
	// one type per job. It does not wait for the database.
	AnnounceJobs(types []string)
	// ListenJobs calls fn with the types of the jobs other engines
	// announce (one per job), until ctx ends; ready is called each time
	// it starts listening (again, after a lost connection).
	ListenJobs(ctx context.Context, ready func(), fn func(types []string)) error
}

// WorkTx is the part of Tx that reads and writes work rows in a command.
type WorkTx interface {
	// Task, Job and Incident read a row for the command; the row cannot
	// change before the transaction ends (PostgreSQL locks it).
	Task(ctx context.Context, id string) (*Task, error)
	Job(ctx context.Context, id string) (*Job, error)
	Incident(ctx context.Context, id string) (*Incident, error)
	// PutTask inserts a task (Rev 0) or updates the row at revision Rev
	// (ErrStale if it is not); it sets t.Rev to the new revision.
	PutTask(ctx context.Context, t *Task) error
	// PutJob is PutTask for jobs.
	PutJob(ctx context.Context, j *Job) error
	// PutIncident is PutTask for incidents.
	PutIncident(ctx context.Context, i *Incident) error
	// EndWork ends the work of a node token that ended: its open or
	// claimed tasks and its open, leased or failed jobs become completed
	// (completed true) or canceled, its open incidents resolved, at at.
	EndWork(ctx context.Context, process string, token int, completed bool, at time.Time) error
	// PutAuditNotes stores notes (one per event).
	PutAuditNotes(ctx context.Context, notes []AuditNote) error
	// PutAttachment inserts or replaces an attachment of a process.
	PutAttachment(ctx context.Context, a *Attachment) error
}

// TaskMatches reports whether a task passes a filter (for stores that
// filter in Go).
func TaskMatches(t *Task, f TaskFilter) bool {
	if len(f.States) > 0 && !contains(f.States, t.State) {
		return false
	}
	if f.Assignee != "" && t.Assignee != f.Assignee {
		return false
	}
	if f.CandidateUser != "" && !contains(t.CandidateUsers, f.CandidateUser) {
		return false
	}
	if f.CandidateGroup != "" && !contains(t.CandidateGroups, f.CandidateGroup) {
		return false
	}
	if f.Queue != "" && t.Queue != f.Queue {
		return false
	}
	if f.Process != "" && t.Process != f.Process {
		return false
	}
	if f.Definition != "" && t.Definition != f.Definition {
		return false
	}
	if f.Mine {
		mine := f.User != "" && (t.Assignee == f.User || t.ClaimedBy == f.User || contains(t.CandidateUsers, f.User))
		for _, g := range f.Groups {
			if contains(t.CandidateGroups, g) {
				mine = true
			}
		}
		if !mine {
			return false
		}
	}
	if c := f.After; c != nil && !TaskAfter(t, c) {
		return false
	}
	return true
}

// TaskAfter reports whether t comes after the cursor in inbox order.
func TaskAfter(t *Task, c *TaskCursor) bool {
	switch {
	case t.Priority != c.Priority:
		return t.Priority < c.Priority
	case !t.CreatedAt.Equal(c.CreatedAt):
		return t.CreatedAt.After(c.CreatedAt)
	}
	return t.ID > c.ID
}

// TaskBefore orders tasks as inboxes show them.
func TaskBefore(a, b *Task) bool {
	return TaskAfter(b, &TaskCursor{Priority: a.Priority, CreatedAt: a.CreatedAt, ID: a.ID})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
