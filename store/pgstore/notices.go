package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/veena-wf/veena/store"
)

// Job notices between the engines sharing a database (store.JobNotices),
// with LISTEN and NOTIFY on a channel of the store's schema. Announcements
// are merged: one goroutine sends them, one NOTIFY at a time, each with
// every type announced since the last one and how many jobs of each, so
// that a burst of new jobs costs a few notices, not one each.

var _ store.JobNotices = (*Store)(nil)

// notices is the announcing side of a store.
type notices struct {
	channel string // the NOTIFY channel
	from    string // this store's id in its notices, to ignore its own
	once    sync.Once
	mu      sync.Mutex
	pending map[string]int // job type -> jobs announced, not sent yet
	kick    chan struct{}
	quit    chan struct{}
	done    chan struct{}

	// listener is the server process id of this store's listening
	// connection (0: none). others tells, as last seen at checked,
	// whether other connections listen on the channel: with none, there
	// is nobody to announce to.
	listener atomic.Uint32
	others   bool
	checked  time.Time
}

// listenSQL is the statement that listens on the channel: other engines'
// listening connections show it in pg_stat_activity as their last query.
func (n *notices) listenSQL() string { return "LISTEN " + pgx.Identifier{n.channel}.Sanitize() }

// othersCheck is how long the announcer trusts what it saw of the other
// listeners.
const othersCheck = time.Second

// notice is the payload of one notification.
type notice struct {
	From string         `json:"from"`
	Jobs map[string]int `json:"jobs"`
}

// maxNoticeTypes bounds the job types in one notice (a payload must stay
// under PostgreSQL's 8000 bytes).
const maxNoticeTypes = 50

func newNotices(schema string) *notices {
	var b [8]byte
	rand.Read(b[:])
	channel := "veena_jobs"
	if schema != "" {
		channel += ":" + schema
	}
	if len(channel) > 63 { // PostgreSQL's identifier length
		channel = channel[:63]
	}
	return &notices{channel: channel, from: hex.EncodeToString(b[:]), pending: map[string]int{},
		kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
}

// AnnounceJobs tells the engines listening on the database that jobs of
// these types (one per job) became available.
func (s *Store) AnnounceJobs(types []string) {
	if len(types) == 0 {
		return
	}
	n := s.notices
	n.once.Do(func() { go s.announce() })
	n.mu.Lock()
	for _, t := range types {
		n.pending[t]++
	}
	n.mu.Unlock()
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// announce sends what AnnounceJobs gathers until the store closes. A
// notice that cannot be sent is dropped: the waiting activations look
// again by themselves.
func (s *Store) announce() {
	n := s.notices
	defer close(n.done)
	for {
		select {
		case <-n.quit:
			return
		case <-n.kick:
		}
		n.mu.Lock()
		jobs := n.pending
		n.pending = map[string]int{}
		n.mu.Unlock()
		if !s.othersListen() {
			continue
		}
		types := make([]string, 0, len(jobs))
		for t := range jobs {
			types = append(types, t)
		}
		sort.Strings(types)
		for len(types) > 0 {
			k := min(len(types), maxNoticeTypes)
			msg := notice{From: n.from, Jobs: map[string]int{}}
			for _, t := range types[:k] {
				msg.Jobs[t] = jobs[t]
			}
			types = types[k:]
			payload, _ := json.Marshal(msg)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, n.channel, string(payload))
			cancel()
		}
	}
}

// othersListen tells whether other connections than this store's listen
// on the channel, as pg_stat_activity shows (their last query is the
// LISTEN), looking again once othersCheck has passed. Without the
// privilege to see other sessions' queries it sees none, and the engines
// fall back on looking for jobs now and then.
func (s *Store) othersListen() bool {
	n := s.notices
	if time.Since(n.checked) < othersCheck {
		return n.others
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
		WHERE datname = current_database() AND query = $1 AND pid <> $2)`, n.listenSQL(), int(n.listener.Load())).Scan(&n.others)
	if err != nil {
		n.others = true // announce rather than leave a listener waiting
	}
	n.checked = time.Now()
	return n.others
}

// stopNotices stops the announcing goroutine, if it runs.
func (s *Store) stopNotices() {
	n := s.notices
	started := true
	n.once.Do(func() { started = false })
	close(n.quit)
	if started {
		<-n.done
	}
}

// ListenJobs listens on its own connection for the jobs other engines
// announce and calls fn with their types, until ctx ends; a lost
// connection is made again after a pause.
func (s *Store) ListenJobs(ctx context.Context, ready func(), fn func(types []string)) error {
	for {
		err := s.listen(ctx, ready, fn)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		_ = err // the activations poll meanwhile
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func (s *Store) listen(ctx context.Context, ready func(), fn func(types []string)) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, s.notices.listenSQL()); err != nil {
		return err
	}
	s.notices.listener.Store(conn.PgConn().PID())
	defer s.notices.listener.Store(0)
	ready()
	for {
		nt, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var msg notice
		if json.Unmarshal([]byte(nt.Payload), &msg) != nil || msg.From == s.notices.from {
			continue
		}
		var types []string
		for t, k := range msg.Jobs {
			for range min(k, 1000) {
				types = append(types, t)
			}
		}
		fn(types)
	}
}
