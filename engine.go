package veena

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"

	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/internal/snapshot"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/petri/netproc"
	"github.com/veena-wf/veena/store"
	"github.com/veena-wf/veena/store/memstore"
)

// Options configure an Engine.
type Options struct {
	// Store keeps definitions and processes; nil means a new in-memory store.
	// The engine owns it: Close closes it.
	Store store.Store
	// Kernel runs the token game; nil means kernel.New(). Register custom
	// node types, functions and listeners on it before Open.
	Kernel *kernel.Kernel
	// Limits bound what one command may do (tokens it creates, time it
	// runs) and how large a process may grow; a command beyond them fails
	// with budget_exceeded or limit_exceeded and changes nothing. Zero
	// fields keep the kernel's (kernel.DefaultLimits unless set on it).
	Limits kernel.Limits
	// Clock gives the time of each command; nil means time.Now.
	Clock func() time.Time
	// Logger receives the engine's warnings (a delayed token that failed to
	// fire, a definition that failed to reload); nil means slog.Default().
	Logger *slog.Logger
	// DefinitionsDir, if set, names a directory whose *.wf.xml files are
	// loaded at Open, in dependency order.
	DefinitionsDir string
	// NoMigrate makes Open fail instead of migrating a schema that is behind.
	NoMigrate bool
	// UniqueContextKeys are context keys whose value may be held by one
	// executing process only; starting a second one fails with conflict.
	UniqueContextKeys []string
	// TimerInterval is how often Start's loop looks for due delayed tokens
	// when none is known to be due sooner (default 1 s).
	TimerInterval time.Duration
	// CacheSize is how many decoded process trees the engine keeps (default 10000).
	CacheSize int
	// TimerLease is how long a due delayed token claimed by this engine is
	// withheld from other engines (default 30 s); an engine that dies
	// holding it delays the token by at most this much.
	TimerLease time.Duration
	// IdempotencyTTL is how long the result of a command with an
	// idempotency key is kept to answer its retries (default
	// DefaultIdempotencyTTL; negative: forever). Once the record has
	// expired, a retry with the same key runs the command again. The
	// background loop (Start) deletes expired records, checking once a
	// minute; engines sharing a database delete at the shortest TTL
	// among them.
	IdempotencyTTL time.Duration
}

// DefaultIdempotencyTTL is how long idempotency records are kept unless
// Options.IdempotencyTTL says otherwise: a week.
const DefaultIdempotencyTTL = 7 * 24 * time.Hour

// Engine is Veena's runtime: it loads definitions, runs commands on
// processes through the kernel and persists every step in its store. It
// keeps no state the store does not have (the tree cache is checked against
// the store on every command), so several engines may share one database.
type Engine struct {
	// transients are the transient attributes of commands waiting in an
	// inbox, by seq: they are not stored, so only this engine's drain
	// gives them to the command (a command applied by another engine, or
	// after a restart, runs without them).
	transients sync.Map

	store  store.Store
	k      *kernel.Kernel
	clock  func() time.Time
	log    *slog.Logger
	opts   Options
	repo   *graph.Repository
	defMu  sync.Mutex
	defSeq int64

	locks rootLocks
	cache *treeCache
	// idle are kernel engines whose command is over (see commandRunner).
	idle  sync.Pool
	bg    sync.WaitGroup // deliveries after commits (messages.go)
	roots rootMap        // nested process id -> root id
	// starting are the new trees whose first command is committing in
	// this engine, until their tree is cached (see rootOf).
	starting startingTrees

	subMu sync.Mutex
	subs  map[string]map[*subscriber]struct{}

	runMuR  sync.Mutex
	runners map[string]Runner
	pool    workPool

	jobMu   sync.Mutex
	jobWait map[string][]*jobWaiter // activations waiting, by job type, in line
	jobPoll time.Duration           // how often a waiting activation looks again
	// listenOnce starts listening for other engines' job notices (with
	// a store that has them, store.JobNotices) when an activation first
	// waits; listening is set while the notices are heard.
	listenOnce sync.Once
	listening  atomic.Bool
	// life ends when the engine closes (endLife).
	life    context.Context
	endLife context.CancelFunc
	rows    rowCache // work rows last read or written (work.go)

	lastPurge time.Time // of finished inbox commands, by the background loop

	armed sync.Map // definition name -> the latest version whose start timers this engine armed (starttimers.go)

	nets      *netproc.Runtime // runs Petri net processes
	analysing chan struct{}    // one state-space exploration at a time
	analyses  analysisCache

	// timeOrderedIDs is set when process IDs are UUIDv7 made at the time
	// the engine's clock gives, so that a creation time range is a range
	// of IDs.
	timeOrderedIDs bool

	runMu   sync.Mutex
	stop    context.CancelFunc
	done    chan struct{}
	wake    chan struct{}
	closeMu sync.Once
}

// Open opens an engine on opts.Store: it migrates the schema (unless
// NoMigrate), loads the stored definitions and then DefinitionsDir.
func Open(ctx context.Context, opts Options) (*Engine, error) {
	st := opts.Store
	if st == nil {
		st = memstore.New()
	}
	if err := st.Migrate(ctx, !opts.NoMigrate); err != nil {
		return nil, storeError("open the store", err)
	}
	k := opts.Kernel
	if k == nil {
		k = kernel.New()
	}
	nets := netRuntime(k)
	for _, f := range []struct {
		from int
		to   *int
	}{
		{opts.Limits.CommandTokens, &k.Limits.CommandTokens},
		{opts.Limits.ProcessTokens, &k.Limits.ProcessTokens},
		{opts.Limits.TokenSetMembers, &k.Limits.TokenSetMembers},
		{opts.Limits.NestingDepth, &k.Limits.NestingDepth},
	} {
		if f.from != 0 {
			*f.to = f.from
		}
	}
	if opts.Limits.CommandTime != 0 {
		k.Limits.CommandTime = opts.Limits.CommandTime
	}
	registerFormats(k)
	if opts.IdempotencyTTL == 0 {
		opts.IdempotencyTTL = DefaultIdempotencyTTL
	}
	e := &Engine{
		store: st,
		k:     k,
		clock: opts.Clock,
		log:   opts.Logger,
		opts:  opts,
		repo:  graph.NewRepository(),
		subs:  map[string]map[*subscriber]struct{}{},
		wake:  make(chan struct{}, 1),

		nets:      nets,
		analysing: make(chan struct{}, 1),
		jobPoll:   jobPoll,
	}
	e.life, e.endLife = context.WithCancel(context.Background())
	if e.clock == nil {
		e.clock = time.Now
		e.timeOrderedIDs = timeOrdered(k.NewID)
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	size := opts.CacheSize
	if size <= 0 {
		size = 10000
	}
	e.cache = newTreeCache(size)
	if k.Definitions == nil {
		k.Definitions = e.repo.Latest
	}
	if err := e.reloadDefinitions(ctx); err != nil {
		return nil, err
	}
	if opts.DefinitionsDir != "" {
		if err := e.loadDir(ctx, opts.DefinitionsDir); err != nil {
			return nil, err
		}
	}
	if err := e.armLatest(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// wakeUp makes the background loop look for due work now.
func (e *Engine) wakeUp() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// timeOrdered reports whether newID makes UUIDv7 IDs stamped with the
// time they are made.
func timeOrdered(newID func() string) bool {
	if newID == nil {
		return false
	}
	id, err := uuid.Parse(newID())
	if err != nil || id.Version() != 7 {
		return false
	}
	sec, nsec := id.Time().UnixTime()
	d := time.Since(time.Unix(sec, nsec))
	return d > -idMargin && d < idMargin
}

// Kernel returns the kernel the engine runs.
func (e *Engine) Kernel() *kernel.Kernel { return e.k }

// Close stops background work and closes the store.
func (e *Engine) Close() error {
	e.Stop()
	e.endLife()
	e.bg.Wait()
	e.pool.close()
	var err error
	e.closeMu.Do(func() { err = e.store.Close() })
	return err
}

// Ready reports whether the store answers and its schema is current.
func (e *Engine) Ready(ctx context.Context) error {
	if err := e.store.Ready(ctx); err != nil {
		return storeError("store not ready", err)
	}
	return nil
}

// Start begins background work: firing delayed tokens when their time
// comes and picking up definitions other engines loaded. Stop ends it.
func (e *Engine) Start(ctx context.Context) error {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	if e.stop != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	e.stop = cancel
	e.done = make(chan struct{})
	go e.background(ctx, e.done)
	return nil
}

// Stop ends the background work started by Start and waits for it.
func (e *Engine) Stop() {
	e.runMu.Lock()
	cancel, done := e.stop, e.done
	e.stop, e.done = nil, nil
	e.runMu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (e *Engine) background(ctx context.Context, done chan struct{}) {
	defer close(done)
	interval := e.opts.TimerInterval
	if interval <= 0 {
		interval = time.Second
	}
	lease := e.opts.TimerLease
	if lease <= 0 {
		lease = 30 * time.Second
	}
	lastSync := time.Now()
	var lastDrain, lastIndex, lastExpiry, lastBuffered time.Time
	indexed := false
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		wait := interval
		timers, err := e.store.ClaimTimers(ctx, e.clock(), lease, 100)
		if err != nil && ctx.Err() == nil {
			e.log.Warn("veena: claim due timers", "err", err)
		}
		for _, t := range timers {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Add(1)
			go func(t store.Timer) {
				defer wg.Done()
				defer func() { <-sem }()
				if err := e.fireTimer(ctx, t); err != nil && ctx.Err() == nil {
					e.log.Warn("veena: fire delayed token", "process", t.Process, "token", t.Token, "err", err)
				}
			}(t)
		}
		if e.fireStartTimers(ctx, lease, 20) {
			wait = 0
		}
		if len(timers) == 100 {
			wait = 0
		} else if next, err := e.store.NextTimer(ctx); err == nil && !next.IsZero() {
			if d := next.Sub(e.clock()); d < wait {
				wait = max(d, 10*time.Millisecond)
			}
		}
		if next, err := e.store.NextStartTimer(ctx); err == nil && !next.IsZero() {
			if d := next.Sub(e.clock()); d < wait {
				wait = max(d, 10*time.Millisecond)
			}
		}
		if !indexed && time.Since(lastIndex) >= 10*time.Second {
			lastIndex = time.Now()
			indexed = e.indexOldRows(ctx)
		}
		if time.Since(lastDrain) >= inboxGrace/2 {
			lastDrain = time.Now()
			e.drainAbandoned(ctx)
		}
		if time.Since(lastExpiry) >= time.Second {
			lastExpiry = time.Now()
			e.expireLeases(ctx)
		}
		if time.Since(lastSync) > 5*time.Second {
			lastSync = time.Now()
			if err := e.reloadDefinitions(ctx); err != nil && ctx.Err() == nil {
				e.log.Warn("veena: reload definitions", "err", err)
			}
			if err := e.armLatest(ctx); err != nil && ctx.Err() == nil {
				e.log.Warn("veena: arm timer start events", "err", err)
			}
		}
		if time.Since(lastBuffered) >= bufferedSweep {
			lastBuffered = time.Now()
			e.startBuffered(ctx, "", "", 100)
		}
		// A little jitter keeps several engines from polling in lockstep.
		if wait > 0 {
			wait += time.Duration(rand.Int64N(int64(wait)/10 + 1))
		}
		select {
		case <-ctx.Done():
			return
		case <-e.wake:
		case <-time.After(wait):
		}
	}
}

// bufferedSweep is how often the background loop looks for buffered
// messages that may start a process now (messages.go).
const bufferedSweep = 2 * time.Second

// indexOldRows rewrites the rows of executing processes that an older
// Veena wrote without where they wait (so that listings find them by
// node), a batch at a time; it reports whether none is left.
func (e *Engine) indexOldRows(ctx context.Context) bool {
	rows, err := e.store.Processes(ctx, store.Filter{Unindexed: true, States: []string{kernel.Executing.String()}, Oldest: true, Limit: 200})
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("veena: find processes to index", "err", err)
		}
		return false
	}
	for _, r := range rows {
		if ctx.Err() != nil {
			return false
		}
		if _, err := e.submit(ctx, &op{Kind: opIndex, Process: r.ID}, ""); err != nil && ctx.Err() == nil {
			e.log.Warn("veena: index where a process waits", "process", r.ID, "err", err)
			return false
		}
	}
	return len(rows) == 0
}

// fireTimer runs a due delayed token's guard again, or wakes a token
// whose work is due (work with a runner is run here first, see runWake),
// as a command. If the
// command fails (the guard cannot be evaluated, say), the failure is kept
// on the timer and an incident of kind timer_failed opens on the token:
// the process shows both, and the token waits for the incident to be
// resolved (which runs its guard again), with no timer meanwhile. Should
// the incident not open, the timer is tried again later, backing off from
// 30 s to 10 min.
func (e *Engine) fireTimer(ctx context.Context, t store.Timer) error {
	out, err := e.submit(ctx, &op{Kind: opTimer, Process: t.Process, Token: t.Token}, "")
	if err == nil && out.Run != nil {
		// The token's work is due and has a runner: run it here.
		if e.runner(out.Run.Runner) == nil {
			return nil // another engine may have the runner
		}
		return e.runWake(ctx, wakeRun{process: t.Process, token: t.Token, work: *out.Run})
	}
	var failed *kernel.Error
	switch {
	case err == nil && out.Error != nil:
		failed = out.err().(*kernel.Error)
	case err != nil && !errors.As(err, &failed):
		return err
	}
	// A timer whose process is gone has nothing left to do; a store that
	// cannot be reached is no failure of the timer.
	if failed == nil || failed.Code == ErrNotFound.Code || failed.Code == ErrUnavailable.Code || failed.Code == "schema_mismatch" {
		return err
	}
	prev, err := e.store.TimerFailures(ctx, t.Process, 0)
	if err != nil {
		return storeError("read timer failures", err)
	}
	attempts := 1
	for _, f := range prev {
		if f.Token == t.Token && f.DueAt.Equal(t.DueAt) {
			attempts = f.Attempts + 1
		}
	}
	now := e.clock()
	f := store.TimerFailure{Process: t.Process, Token: t.Token, DueAt: t.DueAt, Message: failed.Error(), At: now}
	if err := e.store.FailTimer(ctx, f, now.Add(timerRetry(attempts))); err != nil {
		return storeError("record the timer's failure", err)
	}
	token := nodeTokenID(t.Process, t.Token)
	inc, ierr := e.OpenIncident(ctx, token, IncidentTimerFailed, failed.Error())
	level := slog.LevelWarn
	if attempts > 1 {
		level = slog.LevelDebug // said once: the process shows it
	}
	if ierr != nil {
		e.log.Log(ctx, level, "veena: a delayed token's guard failed; the process shows it, and it is tried again later (no incident could be opened)",
			"process", t.Process, "token", token, "attempts", attempts, "code", failed.Code, "err", failed.Error(), "incident_err", ierr)
		return nil
	}
	e.log.Warn("veena: a delayed token's guard failed; an incident is open on it, and resolving it runs the guard again",
		"process", t.Process, "token", token, "incident", inc.ID, "code", failed.Code, "err", failed.Error())
	return nil
}

// IncidentTimerFailed is the kind of incident a delayed token gets when its
// guard fails as its time comes.
const IncidentTimerFailed = "timer_failed"

// timerRetry is how long a timer that failed for the n-th time waits
// before it is tried again: 30 s, doubling up to 10 min.
func timerRetry(n int) time.Duration {
	d := 30 * time.Second
	for i := 1; i < n && d < 10*time.Minute; i++ {
		d *= 2
	}
	return min(d, 10*time.Minute)
}

// errNoChange ends a command that finds nothing to do.
var errNoChange = errors.New("nothing to do")

// tree is a process tree as a command sees it, with what was true of it
// when it was read (to know which timers and context entries to rewrite).
type tree struct {
	root    *kernel.Process
	version int64
	before  factsBook
	// unindexed holds the processes whose rows were written without
	// their waits (by an older Veena): their wait nodes are written whole.
	unindexed map[string]bool
}

type processFacts struct {
	id        string // the process
	state     kernel.State
	timers    int
	context   map[string]string // a copy, to see changes
	works     map[int]string    // node token -> key of the work it waits for
	waitNodes []string
	correl    string // the tokens waiting for messages and signals (messages.go)
	msgWaits  []int  // the tokens waiting for messages
}

func (e *Engine) factsOf(p *kernel.Process) processFacts {
	return e.factsWith(p, nil, false)
}

// factsWith is factsOf with the nodes p waits at, if the caller has
// them already (known).
func (e *Engine) factsWith(p *kernel.Process, waitNodes []string, known bool) processFacts {
	f := processFacts{id: p.ID, state: p.State}
	if len(p.Context) > 0 {
		f.context = maps.Clone(p.Context)
	}
	if p.State == kernel.Executing {
		for _, t := range p.NodeTokens {
			if isDelayed(t) {
				f.timers++
			} else if w := e.k.WakeOf(t); w != nil {
				f.timers++
				if f.works == nil {
					f.works = map[int]string{}
				}
				f.works[t.ID] = w.Key
			}
		}
		if known {
			f.waitNodes = waitNodes
		} else {
			f.waitNodes = waitNodesOf(p)
		}
		cs := correlationsOf(p, "")
		f.correl = correlationKey(cs)
		f.msgWaits = messageWaits(cs)
	}
	return f
}

// isDelayed reports whether a token waits for its delay to pass: a
// delayed token that holds an incident (its guard failed) waits for the
// incident to be resolved instead, and has no timer meanwhile.
func isDelayed(t *kernel.NodeToken) bool {
	return t.Active() && t.GuardAction == kernel.Delay && !t.Complete && !t.Holds(kernel.HoldsIncident)
}

// remember notes the facts of every process of the tree, as the next
// command will find them; fresh are facts the caller has just worked out
// (for processes it did not change since).
func (e *Engine) remember(t *tree, fresh []freshFacts) {
	t.before.reset()
	t.root.Walk(func(p *kernel.Process) {
		for _, f := range fresh {
			if f.p == p {
				t.before.add(f.facts)
				return
			}
		}
		t.before.add(e.factsOf(p))
	})
}

// factsBook holds the facts of the processes of a tree: a list, and an
// index by process id once the tree has more than a few processes (most
// trees have one: a map for it would cost more than the facts).
type factsBook struct {
	list  []processFacts
	index map[string]int
}

// factsIndexed is the number of processes above which a factsBook has
// an index.
const factsIndexed = 8

func (b *factsBook) reset() {
	clear(b.list)
	b.list = b.list[:0]
	b.index = nil
}

func (b *factsBook) add(f processFacts) {
	b.list = append(b.list, f)
	switch n := len(b.list); {
	case n == factsIndexed+1:
		b.index = make(map[string]int, 2*n)
		for i, x := range b.list {
			b.index[x.id] = i
		}
	case n > factsIndexed+1:
		b.index[f.id] = n - 1
	}
}

// get returns the facts of process id, if the tree had it.
func (b *factsBook) get(id string) (processFacts, bool) {
	if b.index != nil {
		i, ok := b.index[id]
		if !ok {
			return processFacts{}, false
		}
		return b.list[i], true
	}
	for _, f := range b.list {
		if f.id == id {
			return f, true
		}
	}
	return processFacts{}, false
}

// freshFacts are the facts of a process as a command left it, and its
// waits (for the command's result).
type freshFacts struct {
	p       *kernel.Process
	facts   processFacts
	waits   []waitRecord
	stalled bool
}

// graphOf finds a definition version, reloading definitions once if this
// engine has not seen it yet (another engine may have loaded it).
func (e *Engine) graphOf(ctx context.Context, name string, version int) (*graph.Graph, error) {
	if g := e.repo.Get(name, version); g != nil {
		return g, e.prepare(g)
	}
	if err := e.reloadDefinitions(ctx); err != nil {
		return nil, err
	}
	if g := e.repo.Get(name, version); g != nil {
		return g, e.prepare(g)
	}
	return nil, &kernel.Error{Code: ErrNotFound.Code, Msg: fmt.Sprintf("definition %s version %d not found", name, version)}
}

// prepare readies a graph for the kernel (once).
func (e *Engine) prepare(g *graph.Graph) error {
	if err := e.prepareGraph(g); err != nil {
		return fmt.Errorf("definition %s: %w", g, definitionError(err))
	}
	return nil
}

func (e *Engine) graphs(ctx context.Context) snapshot.Graphs {
	return func(name string, version int) (*graph.Graph, error) { return e.graphOf(ctx, name, version) }
}

func (e *Engine) decodeTree(ctx context.Context, rows []*store.Process, version int64) (*tree, error) {
	root, err := snapshot.DecodeTree(rows, e.graphs(ctx))
	if err != nil {
		return nil, err
	}
	t := &tree{root: root, version: version}
	for _, r := range rows {
		if r.Waits == nil {
			if t.unindexed == nil {
				t.unindexed = map[string]bool{}
			}
			t.unindexed[r.ID] = true
		}
		if r.ID != r.Root {
			e.roots.put(r.ID, r.Root)
		}
	}
	e.remember(t, nil)
	return t, nil
}

// commandFunc is the kernel part of a command: it changes the tree and
// returns the process whose state the caller gets back. c reads the work
// rows the command decides on and collects what it writes besides the
// tree (see work.go).
type commandFunc func(ke *kernel.Engine, t *tree, c *cmd) (*kernel.Process, error)

// command runs one command on the tree rooted at root ("" starts a new
// tree) as one store transaction, and fills res with its result. For an
// existing tree the caller holds the tree's lock in this engine; if
// another engine holds it, or commands wait in its inbox, command fails
// with store.ErrBusy and the caller queues the command instead (see
// submit). A failed command keeps nothing: its tree is dropped from the
// cache and read again next time.
//
// When the tree is cached, the command runs on it before the transaction
// (so that the transaction only writes); inside the transaction the tree's
// version is checked, and if another engine changed the tree meanwhile the
// early result is thrown away and the command runs again on the stored tree.
//
// first, for a command on an existing tree, tells the first inbox seq of
// the commands that arrived after this one (queued while it held the
// tree's lock in this engine; 0: none). If only such commands wait in the
// inbox, the command still commits ahead of them: it arrived first.
func (e *Engine) command(ctx context.Context, root, key string, fn commandFunc, res *outcome, first func() int64) (*outcome, error) {
	var early *plan
	if root != "" {
		if t := e.cache.take(root); t != nil {
			early = e.run(t, fn, cachedRows{&e.rows, e.store}, ctx)
		}
	} else {
		// A new tree depends on nothing stored: run it before the transaction.
		early = e.run(&tree{}, fn, e.store, ctx)
		if early.err == nil && early.tree.root != nil {
			// Once committed, its work is visible to others (an activation
			// may lease its job in the same commit) before committed below
			// caches the tree: they wait for it instead of reading it.
			defer e.starting.add(early.tree.root.ID)()
		}
	}
	var done *plan
	var prev *outcome
	// attempt runs the transaction; expect: the early result only has to
	// be written; ahead > 0: commands queued from inbox seq ahead on
	// arrived after this one.
	attempt := func(expect bool, ahead int64) error {
		return e.store.Update(ctx, func(ctx context.Context, tx store.Tx) error {
			done, prev = nil, nil
			if key != "" {
				var err error
				if prev, err = lookupKey(ctx, tx, key); err != nil {
					return err
				}
				if prev != nil {
					return prev.checkRequest(key, res.Request)
				}
			}
			p := early
			switch {
			case root == "" && p == nil:
				// A new tree whose early run was stale (a buffered
				// message it took was taken by another): run it here.
				p = e.run(&tree{}, fn, tx, ctx)
			case expect && ahead == 0:
				if err := tx.ExpectTree(ctx, root, p.from); err != nil {
					return err
				}
			case root != "":
				var version int64
				var err error
				if ahead > 0 {
					// Wait for the tree, then go first unless an older
					// command waits in the inbox.
					if version, err = tx.LockTree(ctx, root); err != nil {
						return err
					}
					next, err := tx.NextCommand(ctx, root)
					if err != nil {
						return err
					}
					if next != nil && next.Seq < ahead {
						return store.ErrBusy
					}
				} else if version, err = tx.TryLockTree(ctx, root); err != nil {
					return err
				}
				// A command that failed on the tree as stored failed for
				// good: it is not run a second time, unless it read a
				// work row outside the transaction (which may have changed).
				if p == nil || p.from != version || (p.err != nil && p.cmd.outside) {
					rows, err := tx.Tree(ctx, root)
					if err != nil {
						return err
					}
					t, err := e.decodeTree(ctx, rows, version)
					if err != nil {
						return err
					}
					p = e.run(t, fn, tx, ctx)
				}
			}
			if p.err != nil {
				return p.err
			}
			if err := p.apply(ctx, tx); err != nil {
				return err
			}
			res.Process = p.result
			if key != "" {
				if err := putOutcome(ctx, tx, key, res, e.clock()); err != nil {
					return err
				}
			}
			done = p
			return nil
		})
	}
	// A command that ran on the cached tree only has to write, if the tree
	// is still as cached; if not, it runs again on the stored tree.
	expect := root != "" && early != nil && early.err == nil
	err := attempt(expect, 0)
	if (errors.Is(err, store.ErrBusy) || errors.Is(err, store.ErrStale)) && first != nil {
		// Commands wait in the inbox (or the store could not tell busy
		// from changed): if all those waiting arrived after this one
		// (queued while it ran), it still goes first, with its early
		// result if the tree is as it ran on.
		if ahead := first(); ahead > 0 {
			err = attempt(expect, ahead)
		}
	}
	if (expect || root == "") && errors.Is(err, store.ErrStale) {
		// The tree, or a work row or buffered message the command read,
		// changed meanwhile.
		early = nil
		err = attempt(false, 0)
	}
	if err != nil {
		if errors.Is(err, errNoChange) {
			return &outcome{None: true}, nil
		}
		var due *wakeDue
		if errors.As(err, &due) {
			return &outcome{None: true, Run: &due.work}, nil
		}
		if errors.Is(err, store.ErrBusy) {
			return nil, err
		}
		return nil, storeError("command", err)
	}
	if prev != nil {
		return prev, nil
	}
	e.committed(done)
	return res, nil
}

// committed makes a committed command's tree the cached one and tells
// subscribers its events. A finished tree is not kept: no command changes
// it any more, and the trees of finished processes would crowd out those
// still running (and cost the garbage collector their scanning).
func (e *Engine) committed(p *plan) {
	if len(p.runs) > 0 {
		e.dispatch(p.runs)
	}
	if p.tree != nil {
		if s := p.tree.root.State; s != kernel.Completed && s != kernel.Canceled {
			e.cache.put(p.tree.root.ID, p.tree)
		}
		e.publish(p.events)
		e.rows.remember(p.cmd)
		e.offerJobs(p.cmd.wake)
		e.afterCommit(p)
	}
}

// plan is a command run on a tree, with everything it will write.
type plan struct {
	tree    *tree
	from    int64 // the tree version it ran on
	err     error
	result  *Process
	records []*store.Process
	events  []store.EventRecord // all the command's, for subscribers
	// appended are the event records of events that are not a new
	// process's first (those go with its row, see store.Process).
	appended []store.EventRecord
	timers   []timerWrite
	// correlations are the new correlation rows of the processes whose
	// tokens started or stopped waiting for messages and signals; waiting
	// the message correlations that are new; signals the signals thrown.
	correlations []correlationWrite
	waiting      []store.Correlation
	signals      []string
	// taken are the buffered messages the command delivers: the last seq
	// of each name and key (messages.go); inTx says whether the command
	// ran in its transaction (so read messages there).
	taken map[messageKey]int64
	inTx  bool
	// freed are the message start keys of processes that stopped
	// executing: buffered messages may start a process now.
	freed   []messageKey
	ctxPut  []*kernel.Process // processes whose context starts to count or changed
	ctxDrop []string          // processes whose context stops counting
	unique  []string
	bump    bool // the root row is not rewritten: set its version
	cmd     *cmd // the work rows the command writes, its audit notes (c)
	c       cmd
	// runs are the wakes with a runner that this command created and that
	// the engine runs once it has committed (kernel.Wake.RunNow).
	runs []wakeRun
	// changed are the facts and waits of the processes the command
	// changed, as prepare found them; fresh holds the one of most trees.
	changed []freshFacts
	fresh   [1]freshFacts
}

// wakeRun is a piece of outside work to run after commit.
type wakeRun struct {
	process string
	token   int
	work    kernel.Wake
}

type timerWrite struct {
	process string
	timers  []store.Timer
}

type correlationWrite struct {
	process string
	cs      []store.Correlation
}

// run runs fn on t and works out what to write; t is changed in place;
// rows is where the command reads work rows (the store before the
// transaction, the transaction in it). A panic in user code (a node type,
// a listener) fails the command.
func (e *Engine) run(t *tree, fn commandFunc, rows workRows, ctx context.Context) (p *plan) {
	now := e.clock()
	p = &plan{tree: t, from: t.version, unique: e.opts.UniqueContextKeys}
	p.c = cmd{ctx: ctx, rows: rows, now: now.UTC()}
	p.cmd = &p.c
	r := e.commandRunner(now)
	defer func() {
		if x := recover(); x != nil {
			p.err = &kernel.Error{Code: kernel.ErrExecutionFailed.Code, Msg: fmt.Sprintf("command failed: panic: %v", x)}
			r.stop() // not kept: a panic may have left its engine midway
			return
		}
		e.release(r)
	}()
	ke := r.ke
	target, err := fn(ke, t, p.cmd)
	if err != nil {
		p.err = err
		return p
	}
	_, p.inTx = rows.(store.Tx)
	if err := e.takeBuffered(ke, t, p); err != nil {
		p.err = err
		return p
	}
	if err := p.prepare(e); err != nil {
		p.err = err
		return p
	}
	p.result = e.process(target, t, p.changed)
	return p
}

// commandRunner is a kernel engine for commands, with the timer that
// keeps a command to its time budget (the kernel has no clock). One whose
// command is over serves the next one (Engine.idle), so that neither is
// made again per command.
type commandRunner struct {
	ke    *kernel.Engine
	timer *time.Timer
	armed bool
}

// commandRunner returns a runner for a command at now, its timer running.
func (e *Engine) commandRunner(now time.Time) *commandRunner {
	r, _ := e.idle.Get().(*commandRunner)
	if r == nil || !r.ke.Reuse(now) {
		r = &commandRunner{ke: e.k.Engine(now)}
	}
	if d := e.k.Limits.Effective().CommandTime; d > 0 {
		if r.timer == nil {
			ke := r.ke
			r.timer = time.AfterFunc(d, func() { ke.Interrupt(nil) })
		} else {
			r.timer.Reset(d)
		}
		r.armed = true
	}
	return r
}

// release stops a runner's timer and keeps the runner for another
// command, unless its timer went off (its engine is interrupted, or about
// to be).
func (e *Engine) release(r *commandRunner) {
	if r.stop() {
		e.idle.Put(r)
	}
}

// stop stops the runner's timer; it reports false if the timer went off.
func (r *commandRunner) stop() bool {
	if !r.armed {
		return true
	}
	r.armed = false
	return r.timer.Stop()
}

// prepare encodes the processes the command changed, their new events,
// timers and context changes, and moves the tree to its next version.
func (p *plan) prepare(e *Engine) error {
	t := p.tree
	t.version++
	var err error
	rootSeen := false
	fresh := p.fresh[:0]
	t.root.Walk(func(q *kernel.Process) {
		// Any event means a change, even where the kernel left Dirty unset.
		if err != nil || (!q.Dirty && len(q.Events) == 0) {
			return
		}
		var rec *store.Process
		if rec, err = snapshot.Record(q); err != nil {
			return
		}
		if q.Parent == nil {
			rec.TreeVersion = t.version
			rootSeen = true
		}
		ws := recordWaits(rec, q)
		before, known := t.before.get(q.ID)
		if b := before; known {
			rec.StoredState = b.state.String()
			if !t.unindexed[q.ID] {
				rec.StoredWaitNodes = b.waitNodes
			}
		}
		delete(t.unindexed, q.ID)
		p.records = append(p.records, rec)
		if len(q.Effects) > 0 {
			p.cmd.effects(q)
		}
		if len(q.Events) > 0 {
			p.events = append(p.events, eventRecord(q))
			if r := &p.events[len(p.events)-1]; !known && r.First == 1 {
				rec.FirstEvents = r // stored with the new row
			} else {
				p.appended = append(p.appended, *r)
			}
		}
		facts := e.factsWith(q, rec.WaitNodes, true)
		fresh = append(fresh, freshFacts{p: q, facts: facts, waits: ws, stalled: rec.Stalled})
		if facts.correl != before.correl {
			cs := correlationsOf(q, rec.Root)
			p.correlations = append(p.correlations, correlationWrite{q.ID, cs})
			for _, c := range cs {
				if c.Kind == "message" && !slices.Contains(before.msgWaits, c.Token) {
					p.waiting = append(p.waiting, c)
				}
			}
		}
		if len(q.Events) > 0 {
			p.signals = append(p.signals, thrownSignals(q)...)
		}
		if facts.timers > 0 || before.timers > 0 {
			w := timerWrite{process: q.ID}
			if q.State == kernel.Executing {
				for _, tok := range q.NodeTokens {
					if isDelayed(tok) {
						w.timers = append(w.timers, store.Timer{Process: q.ID, Root: rec.Root, Token: tok.ID, DueAt: tok.DelayUntil()})
					} else if work := e.k.WakeOf(tok); work != nil {
						w.timers = append(w.timers, store.Timer{Process: q.ID, Root: rec.Root, Token: tok.ID, DueAt: work.Due})
						if work.RunNow && work.Runner != "" && before.works[tok.ID] != work.Key {
							p.runs = append(p.runs, wakeRun{process: q.ID, token: tok.ID, work: *work})
						}
					}
				}
			}
			p.timers = append(p.timers, w)
		}
		executing := q.State == kernel.Executing
		wasExecuting := known && before.state == kernel.Executing
		switch {
		case executing && len(q.Context) > 0 && (!wasExecuting || !maps.Equal(before.context, q.Context)):
			p.ctxPut = append(p.ctxPut, q)
		case executing && len(q.Context) == 0 && wasExecuting && len(before.context) > 0:
			p.ctxDrop = append(p.ctxDrop, q.ID)
		case !executing && wasExecuting && len(before.context) > 0:
			p.ctxDrop = append(p.ctxDrop, q.ID)
			p.freed = append(p.freed, heldMessageKeys(before.context)...)
		}
		// Drop the slice, not just its length: a cached tree may wait
		// long for its next command and should not keep the array alive.
		dropTransients(q)
		q.Events = nil
		q.Effects = nil
		q.Dirty = false
	})
	if err != nil {
		return err
	}
	p.bump = !rootSeen
	e.remember(t, fresh)
	p.changed = fresh
	return nil
}

// apply writes the plan in the transaction.
func (p *plan) apply(ctx context.Context, tx store.Tx) error {
	for _, r := range p.records {
		if err := tx.PutProcess(ctx, r); err != nil {
			return err
		}
	}
	if p.bump {
		if err := tx.SetTreeVersion(ctx, p.tree.root.ID, p.tree.version); err != nil {
			return err
		}
	}
	if len(p.appended) > 0 {
		if err := tx.AppendEvents(ctx, p.appended); err != nil {
			return err
		}
	}
	for _, w := range p.timers {
		if err := tx.ReplaceTimers(ctx, w.process, w.timers); err != nil {
			return err
		}
	}
	for _, w := range p.correlations {
		if err := tx.ReplaceCorrelations(ctx, w.process, w.cs); err != nil {
			return err
		}
	}
	for _, q := range p.ctxPut {
		if err := tx.PutContext(ctx, q.ID, q.Context, uniqueKeys(p.unique, q.Context)); err != nil {
			return err
		}
	}
	for _, id := range p.ctxDrop {
		if err := tx.DropContext(ctx, id); err != nil {
			return err
		}
	}
	if err := p.cmd.apply(ctx, tx); err != nil {
		return err
	}
	return p.checkBuffered(ctx, tx)
}

// UniqueContextPrefix begins the context keys whose value may be held by
// one executing process only, whatever Options.UniqueContextKeys says:
// keys a format derives to identify its instances (a schema's routing
// key "@schema:<name>").
const UniqueContextPrefix = "@"

// uniqueKeys adds to the configured unique keys those of c that begin
// with UniqueContextPrefix.
func uniqueKeys(configured []string, c map[string]string) []string {
	out := configured
	for k := range c {
		if strings.HasPrefix(k, UniqueContextPrefix) {
			if len(out) == len(configured) {
				out = append([]string(nil), configured...)
			}
			out = append(out, k)
		}
	}
	return out
}

// rootOf returns the root of the tree a process belongs to: the process
// itself if its tree is cached, a remembered root for nested processes, or
// else what the store says.
func (e *Engine) rootOf(ctx context.Context, id string) (string, error) {
	if e.cache.has(id) {
		return id, nil
	}
	if ch := e.starting.get(id); ch != nil {
		// A new tree this engine is committing: wait until it is cached.
		select {
		case <-ch:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return id, nil
	}
	if r, ok := e.roots.get(id); ok {
		return r, nil
	}
	row, err := e.store.Process(ctx, id)
	if err != nil {
		return "", storeError("find process", err)
	}
	if row.Root != id {
		e.roots.put(id, row.Root)
	}
	return row.Root, nil
}

// startingTrees are the roots of new trees whose first command is
// committing in this engine: each has a channel closed once the command
// has finished (committed and cached, or failed).
type startingTrees struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// add registers a starting tree and returns the function that ends it.
func (s *startingTrees) add(root string) (done func()) {
	ch := make(chan struct{})
	s.mu.Lock()
	if s.m == nil {
		s.m = map[string]chan struct{}{}
	}
	s.m[root] = ch
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.m, root)
		s.mu.Unlock()
		close(ch)
	}
}

// get returns the channel of a starting tree, nil if there is none.
func (s *startingTrees) get(root string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[root]
}

// rootMap remembers the roots of nested processes, forgetting everything
// when it grows too large.
type rootMap struct {
	mu sync.Mutex
	m  map[string]string
}

const maxRoots = 100000

func (r *rootMap) get(id string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	root, ok := r.m[id]
	return root, ok
}

func (r *rootMap) put(id, root string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil || len(r.m) >= maxRoots {
		r.m = map[string]string{}
	}
	r.m[id] = root
}

// storeError gives a store error its API code.
func storeError(op string, err error) error {
	if err == nil {
		return nil
	}
	var ke *kernel.Error
	var de *DefinitionError
	switch {
	case errors.As(err, &de), errors.As(err, &ke):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, store.ErrNotFound):
		return &kernel.Error{Code: ErrNotFound.Code, Msg: err.Error(), Err: err}
	case errors.Is(err, store.ErrConflict):
		return &kernel.Error{Code: ErrConflict.Code, Msg: err.Error(), Err: err}
	case errors.Is(err, store.ErrUnavailable):
		return &kernel.Error{Code: ErrUnavailable.Code, Msg: op + ": " + err.Error(), Err: err}
	case errors.Is(err, store.ErrSchema):
		return &kernel.Error{Code: "schema_mismatch", Msg: err.Error(), Err: err}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// rootLocks queue commands per tree in arrival order.
//
// A command that runs directly holds its tree's lock while it runs, before
// its transaction. Commands that arrive meanwhile queue in the tree's
// durable inbox (so that they survive their caller); the lock remembers the
// first of them (queued), so that the holder, which arrived before them,
// still commits first instead of being queued behind them and run again.
type rootLocks struct {
	mu   sync.Mutex
	cond *sync.Cond
	m    map[string]*rootLock
	gens uint64
}

type rootLock struct {
	waiters []chan struct{}
	gen     uint64 // the current holder
	queued  int64  // the first inbox seq queued here while it held the lock (0: none)
	queuing int    // commands turned away by it that are being queued
}

// holder makes a new holder of rl. The caller holds l.mu.
func (l *rootLocks) holder(rl *rootLock) *rootLock {
	l.gens++
	rl.gen, rl.queued = l.gens, 0
	return rl
}

func (l *rootLocks) lock(ctx context.Context, root string) (func(), error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*rootLock{}
	}
	rl := l.m[root]
	if rl == nil {
		l.m[root] = l.holder(&rootLock{})
		l.mu.Unlock()
		return func() { l.unlock(root) }, nil
	}
	ch := make(chan struct{})
	rl.waiters = append(rl.waiters, ch)
	l.mu.Unlock()
	select {
	case <-ch:
		return func() { l.unlock(root) }, nil
	case <-ctx.Done():
		l.mu.Lock()
		for i, w := range rl.waiters {
			if w == ch {
				rl.waiters = append(rl.waiters[:i], rl.waiters[i+1:]...)
				l.mu.Unlock()
				return nil, ctx.Err()
			}
		}
		l.mu.Unlock()
		l.unlock(root) // it was handed to us meanwhile: pass it on
		return nil, ctx.Err()
	}
}

// tryLock takes the lock of root if it is free, and returns the function
// that releases it and the caller's holder number. If the lock is held, it
// returns a ticket instead: the caller queues its command in the inbox and
// then hands the ticket to queuedAt, so that the holder knows the command
// arrived after it.
func (l *rootLocks) tryLock(root string) (func(), uint64, *lockTicket) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*rootLock{}
	}
	if rl, busy := l.m[root]; busy {
		rl.queuing++
		return nil, 0, &lockTicket{rl: rl, gen: rl.gen}
	}
	rl := l.holder(&rootLock{})
	l.m[root] = rl
	return func() { l.unlock(root) }, rl.gen, nil
}

// lockTicket is a command turned away by the holder gen of a lock.
type lockTicket struct {
	rl  *rootLock
	gen uint64
}

// queuedAt records that the command of a ticket has been queued as seq
// (0: it was not queued after all).
func (l *rootLocks) queuedAt(t *lockTicket, seq int64) {
	if t == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t.rl.queuing--
	if seq > 0 && t.rl.gen == t.gen && (t.rl.queued == 0 || seq < t.rl.queued) {
		t.rl.queued = seq
	}
	if l.cond != nil {
		l.cond.Broadcast()
	}
}

// queuedSince returns the first inbox seq of the commands queued while
// holder held the lock of root, once those being queued are in (0: none).
func (l *rootLocks) queuedSince(root string, holder uint64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cond == nil {
		l.cond = sync.NewCond(&l.mu)
	}
	for {
		rl := l.m[root]
		if rl == nil || rl.gen != holder {
			return 0
		}
		if rl.queuing <= 0 {
			return rl.queued
		}
		l.cond.Wait()
	}
}

func (l *rootLocks) unlock(root string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rl := l.m[root]
	if len(rl.waiters) == 0 {
		delete(l.m, root)
		return
	}
	next := rl.waiters[0]
	rl.waiters = rl.waiters[1:]
	l.holder(rl)
	close(next)
}

// treeCache keeps decoded trees, least recently used first out. A command
// takes a tree out while it runs and puts it back after commit.
type treeCache struct {
	mu    sync.Mutex
	size  int
	ll    *list.List
	items map[string]*list.Element
}

func newTreeCache(size int) *treeCache {
	return &treeCache{size: size, ll: list.New(), items: map[string]*list.Element{}}
}

// take removes a tree from the cache and returns it (nil if absent); the
// command that took it puts it back after it committed.
func (c *treeCache) take(root string) *tree {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[root]
	if !ok {
		return nil
	}
	c.ll.Remove(el)
	delete(c.items, root)
	return el.Value.(*tree)
}

func (c *treeCache) put(root string, t *tree) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[root]; ok {
		c.ll.Remove(el)
	}
	c.items[root] = c.ll.PushFront(t)
	for c.ll.Len() > c.size {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.items, last.Value.(*tree).root.ID)
	}
}

func (c *treeCache) has(root string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.items[root]
	return ok
}
