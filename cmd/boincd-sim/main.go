// Command boincd-sim is boincd's client emulator and policy study: a tool
// for whoever tunes the scheduler, kept out of the daemon (as BOINC's
// emulator is separate from its client).
//
//	boincd-sim [--seed N] [--days D] [--json] SCENARIO.toml   emulate the scheduler
//	boincd-sim --sweep [--out DIR] [--seeds N] [--quick]       the policy study
//	boincd-sim version
//
// It runs the very scheduling core the daemon runs (round-robin
// simulation, schedule, work fetch, debts) against a simulated host and
// simulated project servers. Scenario format and formulas: sim/README.md;
// the study: docs/policy-study.md.
//
// The policy study, with its plots, is the command boincd-sim-sweep
// (./boincd-sim-sweep), which --sweep runs: the emulator itself links
// none of the plotting stack (gonum/plot, go-latex, fpdf, svgo), whose
// fonts and initialisation cost every run about 5 MB of resident memory.
// One emulation is one goroutine, so boincd-sim also caps the runtime at
// two threads running Go code (the second for the concurrent garbage
// collector) and collects at half the default heap growth (GOGC=50):
// memory then stays the same whatever the host's CPU count, under BOINC's
// emulator's (bench/emulator). GOMAXPROCS and GOGC in the environment
// override both.
//
// default.pgo is a CPU profile of the emulator on bench/emulator's
// scenarios: go build uses it for profile-guided optimisation (the
// scheduling core's small hot helpers get inlined: about 7 % fewer
// instructions per step). Only this command's build uses it, not the
// daemon's. Regenerate it after changes to the core with
// --cpuprofile on those scenarios, merged by go tool pprof -proto.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/sim"
)

func main() {
	tuneRuntime()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// tuneRuntime: see the package documentation.
func tuneRuntime() {
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) > 2 {
		runtime.GOMAXPROCS(2)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
}

// run is the whole command; args exclude the program name.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "version", "--version":
			fmt.Fprintf(stdout, "boincd-sim (boincd %d.%d.%d scheduling core)\n", boinc.ClientMajor, boinc.ClientMinor, boinc.ClientRelease)
			return 0
		case "help":
			return run([]string{"--help"}, stdout, stdout)
		}
	}
	fs := flag.NewFlagSet("boincd-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: boincd-sim [flags] SCENARIO.toml
       boincd-sim --sweep [--out DIR] [--seeds N] [--quick] [--only ID,...] [--compare]
       boincd-sim version

Runs boincd's scheduling core (round-robin simulation, schedule, work
fetch, debts) against a simulated host and simulated project servers, and
prints the processing each project received and the metrics idle fraction,
wasted fraction, share violation, monotony and RPCs per job. Scenario
format and formulas: sim/README.md; examples in sim/scenarios/.

With --sweep it runs the policy study instead (docs/policy-study.md): six
parameter sweeps after Kondo, Anderson and McLeod (e-Science 2007), every
point over several seeds, in parallel; a CSV per experiment and a PNG per
figure go to --out. The study is the command boincd-sim-sweep, found next
to boincd-sim, on the PATH or (in a checkout) run with go run.

`)
		fs.PrintDefaults()
	}
	var (
		seed                   uint64
		days                   float64
		asJSON, eventDriven    bool
		timelineHours          float64
		policy, sched, fetcher string
		sweep, quick, compare  bool
		outDir, only           string
		seeds                  int
		cpuProfile, memProfile string
	)
	fs.Uint64Var(&seed, "seed", 0, "random seed (default: the scenario's)")
	fs.Float64Var(&days, "days", 0, "simulated days (default: the scenario's duration_days)")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fs.BoolVar(&eventDriven, "event_driven", false, "end a step early at each event (job done, host on/off, reply), as event_driven = true does")
	fs.Float64Var(&timelineHours, "timeline", 0, "with --json: add per-project processing in buckets of this many hours")
	fs.StringVar(&policy, "policy", "", "project priority policy: debt, or rec (the C++ client's REC; it brings its own work fetch unless one is named) (default: the scenario's [policies] priority, else debt)")
	fs.StringVar(&sched, "sched", "", "CPU/GPU scheduler: cs2 (core) or cs1 (default: the scenario's, else cs2)")
	fs.StringVar(&fetcher, "fetch", "", "work-fetch policy: wf2 (core), wf2-noguard, wf1 or rec (default: the scenario's, else rec under priority rec, else wf2)")
	fs.BoolVar(&sweep, "sweep", false, "run the policy study's sweeps instead of one scenario")
	fs.StringVar(&outDir, "out", "policy-study", "with --sweep: directory for the CSVs and plots")
	fs.IntVar(&seeds, "seeds", 5, "with --sweep: seeds per point")
	fs.BoolVar(&quick, "quick", false, "with --sweep: a few points per experiment and 25 simulated days")
	fs.StringVar(&only, "only", "", "with --sweep: comma-separated experiment IDs or numbers (default: all)")
	fs.BoolVar(&compare, "compare", false, "with --sweep: also compare boincd's default before and after the study's change (and REC) on the study's suite")
	fs.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	fs.StringVar(&memProfile, "memprofile", "", "write a heap profile (allocations) at the end of the run to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if sweep {
		if fs.NArg() != 0 {
			fmt.Fprintln(stderr, "boincd-sim: --sweep takes no scenario file")
			return 2
		}
		return runSweep(outDir, only, seeds, quick, compare, stdout, stderr)
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "boincd-sim: want exactly one scenario file")
		fs.Usage()
		return 2
	}
	if timelineHours < 0 {
		fmt.Fprintf(stderr, "boincd-sim: --timeline %g: want hours > 0\n", timelineHours)
		return 2
	}
	var (
		opt sim.Options
		err error
	)
	opt.BucketSeconds = timelineHours * 3600
	// Unset flags leave the scenario's [policies] in charge.
	if policy != "" {
		if opt.Policy, err = sim.PolicyByName(policy); err != nil {
			fmt.Fprintln(stderr, "boincd-sim: --policy:", err)
			return 2
		}
	}
	if sched != "" {
		if opt.Scheduler, err = sim.SchedulerByName(sched); err != nil {
			fmt.Fprintln(stderr, "boincd-sim: --sched:", err)
			return 2
		}
	}
	if fetcher != "" {
		if opt.Fetcher, err = sim.FetcherByName(fetcher); err != nil {
			fmt.Fprintln(stderr, "boincd-sim: --fetch:", err)
			return 2
		}
	}
	sc, err := sim.LoadScenario(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "boincd-sim:", err)
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
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(stderr, "boincd-sim: --cpuprofile:", err)
			return 1
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	if memProfile != "" {
		runtime.MemProfileRate = 4096
		defer func() {
			f, err := os.Create(memProfile)
			if err == nil {
				err = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
			if err != nil {
				fmt.Fprintln(stderr, "boincd-sim: --memprofile:", err)
			}
		}()
	}
	rep, err := sim.Run(ctx, sc, opt)
	if err != nil {
		fmt.Fprintln(stderr, "boincd-sim:", err)
		return 1
	}
	if asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "boincd-sim:", err)
		return 1
	}
	return 0
}
