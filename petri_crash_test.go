package veena_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/internal/pgtest"
	"github.com/veena-wf/veena/store"
)

// The Petri net crash test: child engines run net processes whose
// activities' jobs workers lease, report an intermediate result for and
// complete, while the children are killed with SIGKILL at random moments
// and started again on the same database. Each job gets one intermediate
// result ("tick", whose arc gives a token to ticks and the activity its
// token back) and one final result ("ok", whose arc takes the token to
// done), every command with an idempotency key derived from the job. At
// the end every process must have completed with all three items done and
// exactly three ticks (every acknowledged result applied once, tokens
// conserved), every acknowledged job completed, and the event log of each
// process without gaps.
//
// VEENA_NET_CRASH_KILLS sets the kills (default 3; -short: 2),
// VEENA_NET_CRASH_PROCESSES the processes (default 400).

const crashNet = `<?xml version="1.0"?>
<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml">
 <net id="pipeline" type="http://www.pnml.org/version-2009/grammar/ptnet">
  <page id="pg">
   <place id="todo"><initialMarking><text>3</text></initialMarking></place>
   <place id="work"><name><text>crunch(item)</text></name></place>
   <place id="ticks"/><place id="done"/>
   <transition id="take"/>
   <transition id="tick"><name><text>count tick</text></name></transition>
   <transition id="finish"/>
   <arc id="1" source="todo" target="take"/><arc id="2" source="take" target="work"/>
   <arc id="3" source="work" target="tick"><name><text>tick</text></name></arc>
   <arc id="4" source="tick" target="work"/><arc id="5" source="tick" target="ticks"/>
   <arc id="6" source="work" target="finish"><name><text>ok</text></name></arc>
   <arc id="7" source="finish" target="done"/>
  </page>
 </net>
</pnml>`

func TestNetCrash(t *testing.T) {
	kills := envInt("VEENA_NET_CRASH_KILLS", 3)
	if testing.Short() {
		kills = min(kills, 2)
	}
	total := envInt("VEENA_NET_CRASH_PROCESSES", 400)
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		netCrashRun(t, "sqlite", filepath.Join(dir, "veena.db"), dir, 1, kills, total)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		netCrashRun(t, "postgres", pgtest.Schema(t), t.TempDir(), 2, kills, total)
	})
}

func netCrashRun(t *testing.T, backend, where, dir string, engines, kills, total int) {
	crashChildren(t, "TestNetCrashChild", backend, where, dir, engines, kills, 700*time.Millisecond, 1300*time.Millisecond,
		"VEENA_NET_CRASH_CHILD=1", "VEENA_NET_CRASH_PROCESSES="+strconv.Itoa(total))
	verifyNetCrash(t, crashStore(t, backend, where, 0), readAcks(t, dir), total)
}

func verifyNetCrash(t *testing.T, st store.Store, acks []ack, total int) {
	ctx := context.Background()
	e := open(t, st, veena.Options{})
	defer e.Close()
	var all []veena.Process
	after := ""
	for {
		page, err := e.Processes(ctx, veena.ProcessFilter{Limit: 1000, After: after})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Items...)
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	if len(all) != total {
		t.Fatalf("%d processes in the store, want exactly %d", len(all), total)
	}
	byItem := map[string]string{}
	for _, p := range all {
		item := p.Context["item"]
		if other, dup := byItem[item]; dup {
			t.Fatalf("item %s started twice: %s and %s", item, other, p.ID)
		}
		byItem[item] = p.ID
		m, err := e.NetMarking(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if p.State != "completed" || nonEmpty(m) != "done=3 ticks=3" || len(m.Activities) != 0 {
			t.Errorf("process %s: %s, marking %s, activities %+v", p.ID, p.State, nonEmpty(m), m.Activities)
		}
		evs, err := e.Events(ctx, p.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		fired := 0
		for i, ev := range evs {
			if ev.Seq != int64(i+1) {
				t.Fatalf("process %s: event %d has seq %d", p.ID, i, ev.Seq)
			}
			if ev.Type == "TRANSITION_FIRED" {
				fired++
			}
		}
		if fired != 9 {
			t.Errorf("process %s: %d transitions fired, want 9 (3 takes, 3 ticks, 3 finishes)", p.ID, fired)
		}
	}
	checked := 0
	for _, a := range acks {
		switch a.kind {
		case "start":
			if byItem[a.a] != a.b {
				t.Errorf("acknowledged start of item %s made %s, the store has %s", a.a, a.b, byItem[a.a])
			}
		case "done":
			j, err := e.Job(ctx, a.a)
			if err != nil || j.State != "completed" {
				t.Errorf("acknowledged completion of job %s: %+v %v", a.a, j, err)
			}
			checked++
		}
	}
	t.Logf("%d processes, %d acknowledged commands (%d job completions) verified", len(all), len(acks), checked)
}

// TestNetCrashChild is an engine with its workers under load; only
// TestNetCrash runs it.
func TestNetCrashChild(t *testing.T) {
	if os.Getenv("VEENA_NET_CRASH_CHILD") != "1" {
		t.Skip("run by TestNetCrash")
	}
	ctx := context.Background()
	backend, where, dir := os.Getenv("VEENA_CRASH_BACKEND"), os.Getenv("VEENA_CRASH_WHERE"), os.Getenv("VEENA_CRASH_DIR")
	slot := envInt("VEENA_CRASH_SLOT", 0)
	total := envInt("VEENA_NET_CRASH_PROCESSES", 400)
	e, err := veena.Open(ctx, veena.Options{Store: crashStore(t, backend, where, slot), TimerInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, _, err = e.LoadDefinition(ctx, "pipeline.pnml", []byte(crashNet), ""); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	logf, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("acks-%d.log", slot)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var logMu sync.Mutex
	logAck := func(kind, a, b string) {
		logMu.Lock()
		fmt.Fprintf(logf, "%s %s %s\n", kind, a, b)
		logMu.Unlock()
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		os.Exit(3)
	}
	var wg sync.WaitGroup
	// Starters: every child starts every item's process, by key, so that
	// the last run starts those a kill cut short.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range total {
			n := i
			if slot%2 == 1 {
				n = total - 1 - i
			}
			item := strconv.Itoa(n)
			p, err := e.StartProcess(ctx, veena.StartRequest{Definition: "pipeline", Context: map[string]string{"item": item}, IdempotencyKey: "start-" + item})
			if err != nil {
				fail("start %s: %v", item, err)
			}
			logAck("start", item, p.ID)
		}
	}()
	// Workers: lease jobs, report the tick, complete. They share one name
	// (a pool of workers of one identity, in every child and every run), so
	// that a job whose lease ran out while its worker was killed is taken
	// up again under the same name and its results, sent again with the
	// same keys, are recognised as retries.
	const name = "crunchers"
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			idle := 0
			for {
				jobs, err := e.ActivateJobs(ctx, veena.ActivateRequest{Type: "crunch", Worker: name, MaxJobs: 4, LockFor: 2 * time.Second, Wait: 100 * time.Millisecond})
				if err != nil {
					fail("activate: %v", err)
				}
				if len(jobs) == 0 {
					idle++
					if idle > 30 && allDone(ctx, e, total) {
						return
					}
					continue
				}
				idle = 0
				for _, j := range jobs {
					if _, err := e.ReportJobResult(ctx, j.ID, veena.JobResultRequest{Worker: name, Result: "tick", IdempotencyKey: "tick-" + j.ID}); err != nil {
						if veena.Code(err) == "job_not_leased" {
							continue // its lease ran out and another worker has it
						}
						fail("tick %s: %v", j.ID, err)
					}
					logAck("tick", j.ID, "-")
					if _, err := e.CompleteJob(ctx, j.ID, veena.CompleteJobRequest{Worker: name, Result: "ok", IdempotencyKey: "done-" + j.ID}); err != nil {
						if veena.Code(err) == "job_not_leased" {
							continue
						}
						fail("complete %s: %v", j.ID, err)
					}
					logAck("done", j.ID, "-")
				}
			}
		}()
	}
	wg.Wait()
	logf.Close()
	e.Close()
}

// allDone reports whether every item's process exists and has completed.
func allDone(ctx context.Context, e *veena.Engine, total int) bool {
	n, after := 0, ""
	for {
		page, err := e.Processes(ctx, veena.ProcessFilter{Definition: "pipeline", State: "completed", Limit: 1000, After: after})
		if err != nil {
			return false
		}
		n += len(page.Items)
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	return n >= total
}
