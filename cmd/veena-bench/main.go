// Command veena-bench runs Veena's load generator (package bench) on its
// own; veena bench offers the same.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/veena-wf/veena/bench"
)

func main() {
	var cfg bench.Config
	targets := flag.String("targets", "", "comma-separated: sqlite-full, sqlite-normal, postgres, memory (default: the first three)")
	workloads := flag.String("workloads", "", "comma-separated: wait, auto10, split10 (default: all)")
	flag.IntVar(&cfg.Concurrency, "clients", 16, "concurrent clients")
	flag.DurationVar(&cfg.Duration, "duration", 5*time.Second, "measuring time per run")
	flag.IntVar(&cfg.Parked, "parked", 0, "processes parked in the database before each run")
	flag.StringVar(&cfg.PostgresURL, "postgres", "", "PostgreSQL URL (default $VEENA_TEST_POSTGRES or the local test database)")
	engines := flag.String("engines", "", "PostgreSQL engine counts, comma-separated (default 1,3)")
	group := flag.String("group", "", "SQLite group commit modes: off, on or off,on (default both)")
	asJSON := flag.Bool("json", false, "print the report as JSON")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "veena-bench:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "veena-bench: start the CPU profile:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if *targets != "" {
		cfg.Targets = strings.Split(*targets, ",")
	}
	if *workloads != "" {
		cfg.Workloads = strings.Split(*workloads, ",")
	}
	for _, s := range strings.Split(*engines, ",") {
		var n int
		if _, err := fmt.Sscan(s, &n); err == nil {
			cfg.Engines = append(cfg.Engines, n)
		}
	}
	for _, s := range strings.Split(*group, ",") {
		switch s {
		case "on":
			cfg.GroupCommit = append(cfg.GroupCommit, true)
		case "off":
			cfg.GroupCommit = append(cfg.GroupCommit, false)
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	rep, err := bench.Run(ctx, cfg, os.Stderr)
	if *asJSON {
		if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
			fmt.Fprintln(os.Stderr, "veena-bench: write the report:", err)
		}
	} else {
		rep.WriteTable(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "veena-bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}
