package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/boincd/boincd/sim"
)

// runSimulate is "boincd simulate": the client emulator on a scenario file.
func runSimulate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("boincd simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: boincd simulate [flags] SCENARIO.toml

Runs boincd's scheduling core (round-robin simulation, schedule, work
fetch, debts) against a simulated host and simulated project servers, and
prints the processing each project received and the metrics idle fraction,
wasted fraction, share violation, monotony and RPCs per job. Scenario
format and formulas: sim/README.md; examples in sim/scenarios/.

`)
		fs.PrintDefaults()
	}
	var (
		seed                   uint64
		days                   float64
		asJSON, eventDriven    bool
		timelineHours          float64
		policy, sched, fetcher string
	)
	fs.Uint64Var(&seed, "seed", 0, "random seed (default: the scenario's)")
	fs.Float64Var(&days, "days", 0, "simulated days (default: the scenario's duration_days)")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fs.BoolVar(&eventDriven, "event_driven", false, "end a step early at each event (job done, host on/off, reply), as event_driven = true does")
	fs.Float64Var(&timelineHours, "timeline", 0, "with --json: add per-project processing in buckets of this many hours")
	fs.StringVar(&policy, "policy", "debt", "project priority policy: debt")
	fs.StringVar(&sched, "sched", "core", "CPU/GPU scheduler: core")
	fs.StringVar(&fetcher, "fetch", "core", "work-fetch policy: core")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "boincd simulate: want exactly one scenario file")
		fs.Usage()
		return 2
	}
	if timelineHours < 0 {
		fmt.Fprintf(stderr, "boincd simulate: --timeline %g: want hours > 0\n", timelineHours)
		return 2
	}
	var (
		opt sim.Options
		err error
	)
	opt.BucketSeconds = timelineHours * 3600
	if opt.Policy, err = sim.PolicyByName(policy); err != nil {
		fmt.Fprintln(stderr, "boincd simulate: --policy:", err)
		return 2
	}
	if opt.Scheduler, err = sim.SchedulerByName(sched); err != nil {
		fmt.Fprintln(stderr, "boincd simulate: --sched:", err)
		return 2
	}
	if opt.Fetcher, err = sim.FetcherByName(fetcher); err != nil {
		fmt.Fprintln(stderr, "boincd simulate: --fetch:", err)
		return 2
	}
	sc, err := sim.LoadScenario(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "boincd simulate:", err)
		return 1
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["seed"] {
		sc.Seed = seed
	}
	if set["days"] {
		sc.DurationDays = days
	}
	if eventDriven {
		sc.EventDriven = true
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := sim.Run(ctx, sc, opt)
	if err != nil {
		fmt.Fprintln(stderr, "boincd simulate:", err)
		return 1
	}
	if asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "boincd simulate:", err)
		return 1
	}
	return 0
}
