//go:build linux

// Command emulator measures the client emulator, boincd-sim, on the
// comparison set of issue 19 — every committed scenario (sim/scenarios)
// and the policy study's project mix at 5, 10 and 20 projects (sim/bce:
// ComparisonSet), each run for 100 simulated days in 60 s steps — and
// prints, per scenario, the wall time, the CPU time (user + system) and
// the maximum resident set size (getrusage's ru_maxrss, what
// /usr/bin/time -v reports), side by side with BOINC's own client
// emulator (BCE) when one is given, and the ratios.
//
//	go run ./bench/emulator                                              # boincd-sim alone
//	go run ./bench/emulator -boinc ../shared/bce/boinc-client-emulator   # side by side
//	go run ./bench/emulator -runs 5 -boinc BCE -boinc-inputs DIR         # and keep BCE's inputs
//
// Each scenario runs -runs times, boincd-sim and BCE taking turns; the
// table gives the fastest wall and CPU times (the least disturbed by
// other load on the host) and the largest RSS. It is a benchmark, not a
// test: the numbers depend on the host and its load (the load average is
// printed), so compare only figures measured together.
//
// # BOINC's emulator
//
// BCE (client/sim.cpp driving the C++ client's scheduling code, built
// with -DSIM) is not part of boincd or its CI; ../shared/bce/README.md
// says how the prebuilt one was built from upstream BOINC, unmodified.
// Give it with -boinc (or $BOINC_SIM). The benchmark writes BCE's inputs
// itself (package sim/bce), from the very TOML that boincd-sim runs, for
// every scenario BCE can express: client_state.xml (host, availability,
// projects, apps, app versions), global_prefs.xml and cc_config.xml, into
// a temporary directory, or into -boinc-inputs DIR (one directory per
// row, kept). It runs BCE as
//
//	boinc-client-emulator --infile_prefix IN/NAME/ --outfile_prefix OUT/NAME/ --duration <days×86400> --delta 60 [policy flags]
//
// with a PATH holding no gnuplot (BCE runs gnuplot at the end, which
// would count in its time and memory), and deletes BCE's outputs (about
// 100 MB per row, mostly timeline.html) after each row. Scenarios BCE
// cannot express (events at fixed times: a project attaching, an app's
// jobs appearing later or capped) get a line saying why; differences
// left in the others (BCE's servers always screen jobs by deadline, its
// jobs all have their app's mean size, a fixed outage dropped) are
// listed under the table. Each emulator runs its own client's policies
// (boincd's debts and fetch; the C++ client's REC), so the figures of
// merit printed beside the timings are for orientation, not a test.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/boincd/boincd/sim/bce"
)

// Targets of issue 19: ≥ 10× BCE's speed at no more than its memory.
const targetSpeedup = 10.0

type result struct {
	wall, cpu time.Duration // fastest of the runs
	rssKB     int64         // largest of the runs (KiB)
	stdout    []byte        // the last run's
}

func (r result) rssMB() float64 { return float64(r.rssKB) * 1024 / 1e6 }

func main() {
	simBin := flag.String("sim", "", "boincd-sim binary (default: build ./cmd/boincd-sim from this checkout)")
	boincBin := flag.String("boinc", os.Getenv("BOINC_SIM"), "BOINC's client emulator (e.g. ../shared/bce/boinc-client-emulator), optional; also $BOINC_SIM")
	boincInputs := flag.String("boinc-inputs", os.Getenv("BOINC_SIM_INPUTS"), "write the generated BCE inputs here, one directory per scenario, and keep them (default: a temporary directory); also $BOINC_SIM_INPUTS")
	runs := flag.Int("runs", 3, "runs per scenario")
	days := flag.Float64("days", 100, "simulated days")
	flag.Parse()
	if err := run(*simBin, *boincBin, *boincInputs, *runs, *days); err != nil {
		fmt.Fprintln(os.Stderr, "emulator:", err)
		os.Exit(1)
	}
}

// row is one scenario's outcome.
type row struct {
	name      string
	boincd    result
	bce       *result     // nil: not run
	bceFig    bce.Results // BCE's figures of merit
	boincdFig metrics
	notes     []string
	why       string // BCE cannot express it
}

// metrics are boincd-sim's figures of merit, from its --json report.
type metrics struct {
	Idle    float64 `json:"idle_fraction"`
	Wasted  float64 `json:"wasted_fraction"`
	Share   float64 `json:"share_violation"`
	Monoton float64 `json:"monotony"`
}

func run(simBin, boincBin, boincInputs string, runs int, days float64) error {
	if runs < 1 {
		return fmt.Errorf("-runs %d: want at least 1", runs)
	}
	if !(days > 0) {
		return fmt.Errorf("-days %g: want > 0", days)
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "bench-emulator-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if simBin == "" {
		simBin = filepath.Join(tmp, "boincd-sim")
		build := exec.Command("go", "build", "-o", simBin, "./cmd/boincd-sim")
		build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/boincd-sim: %w", err)
		}
	}
	withBCE := boincBin != ""
	var bceEnv []string
	if withBCE {
		if boincBin, err = filepath.Abs(boincBin); err != nil {
			return err
		}
		if _, err := os.Stat(boincBin); err != nil {
			return fmt.Errorf("-boinc: %w", err)
		}
		if boincInputs == "" {
			boincInputs = filepath.Join(tmp, "bce-in")
		}
		if boincInputs, err = filepath.Abs(boincInputs); err != nil {
			return err
		}
		// BCE ends by running gnuplot through system(); with no gnuplot on
		// its PATH that fails at once ("gnuplot: not found", exit 0) and
		// neither its time nor its memory counts in BCE's.
		noPlot := filepath.Join(tmp, "empty-path")
		if err := os.Mkdir(noPlot, 0o755); err != nil {
			return err
		}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "PATH=") {
				bceEnv = append(bceEnv, kv)
			}
		}
		bceEnv = append(bceEnv, "PATH="+noPlot)
	}
	cases, err := bce.ComparisonSet()
	if err != nil {
		return err
	}
	fi, err := os.Stat(simBin)
	if err != nil {
		return err
	}
	fmt.Printf("boincd-sim %s (%.1f MB binary); %d CPUs, %s, load average %s\n", simBin, float64(fi.Size())/1e6, runtime.NumCPU(), runtime.Version(), loadAvg())
	if withBCE {
		bi, _ := os.Stat(boincBin)
		fmt.Printf("BCE %s (%.1f MB binary), inputs in %s\n", boincBin, float64(bi.Size())/1e6, boincInputs)
	} else {
		fmt.Println("no BCE given: boincd-sim alone (side by side: -boinc ../shared/bce/boinc-client-emulator)")
	}
	fmt.Printf("%g simulated days, 60 s steps; fastest of %d runs, largest RSS\n\n", days, runs)

	var rows []row
	for _, c := range cases {
		rw := row{name: c.Name}
		tomlPath := filepath.Join(tmp, c.Name+".toml")
		if err := os.WriteFile(tomlPath, c.TOML, 0o644); err != nil {
			return err
		}
		simCmd := func() *exec.Cmd {
			return exec.Command(simBin, "--json", "--days", fmt.Sprint(days), tomlPath)
		}
		var bceCmd func() *exec.Cmd
		var out string
		if withBCE {
			in, err := bce.FromScenario(c.Scenario)
			var ue *bce.Unexpressible
			switch {
			case errors.As(err, &ue):
				rw.why = strings.Join(ue.Reasons, "; ")
			case err != nil:
				return fmt.Errorf("%s: %w", c.Name, err)
			default:
				dir := filepath.Join(boincInputs, c.Name)
				if err := in.WriteDir(dir); err != nil {
					return err
				}
				out = filepath.Join(tmp, "bce-out", c.Name)
				if err := os.MkdirAll(out, 0o755); err != nil {
					return err
				}
				args := append([]string{"--infile_prefix", dir + "/", "--outfile_prefix", out + "/",
					"--duration", fmt.Sprint(days * 86400), "--delta", fmt.Sprint(in.Delta)}, in.Args...)
				bceCmd = func() *exec.Cmd {
					cmd := exec.Command(boincBin, args...)
					cmd.Dir, cmd.Env = out, bceEnv
					return cmd
				}
				rw.notes = in.Notes
			}
		}
		rw.boincd = result{wall: math.MaxInt64, cpu: math.MaxInt64}
		b := result{wall: math.MaxInt64, cpu: math.MaxInt64}
		for range runs {
			if err := measure(&rw.boincd, simCmd()); err != nil {
				return fmt.Errorf("%s: %w", c.Name, err)
			}
			if bceCmd != nil {
				if err := measure(&b, bceCmd()); err != nil {
					return fmt.Errorf("%s: BCE: %w", c.Name, err)
				}
			}
		}
		var rep struct {
			Metrics metrics `json:"metrics"`
		}
		if err := json.Unmarshal(rw.boincd.stdout, &rep); err != nil {
			return fmt.Errorf("%s: boincd-sim --json: %w", c.Name, err)
		}
		rw.boincdFig = rep.Metrics
		if bceCmd != nil {
			rw.bce = &b
			data, err := os.ReadFile(filepath.Join(out, "results.dat"))
			if err == nil {
				rw.bceFig, err = bce.ParseResults(data)
			}
			if err != nil {
				return fmt.Errorf("%s: BCE: %w", c.Name, err)
			}
			// timeline.html and rec.dat: about 100 MB per 100-day row.
			if err := os.RemoveAll(out); err != nil {
				return err
			}
		}
		rows = append(rows, rw)
	}
	printTables(rows, withBCE)
	return nil
}

func printTables(rows []row, withBCE bool) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	if withBCE {
		fmt.Fprintln(tw, "scenario\tboincd wall s\tCPU s\tmax RSS MB\tBCE wall s\tCPU s\tmax RSS MB\twall ×\tCPU ×\tRSS ratio\t")
	} else {
		fmt.Fprintln(tw, "scenario\tboincd wall s\tCPU s\tmax RSS MB\t")
	}
	minSpeed, maxSpeed, minRSS, maxRSS := math.Inf(1), 0.0, math.Inf(1), 0.0
	minCPU, maxCPU := math.Inf(1), 0.0
	compared := 0
	for _, r := range rows {
		d := r.boincd
		if r.bce == nil {
			if withBCE {
				fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.1f\t-\t-\t-\t-\t-\t-\t\n", r.name, d.wall.Seconds(), d.cpu.Seconds(), d.rssMB())
			} else {
				fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.1f\t\n", r.name, d.wall.Seconds(), d.cpu.Seconds(), d.rssMB())
			}
			continue
		}
		b := *r.bce
		speed := b.wall.Seconds() / d.wall.Seconds()
		cpu := b.cpu.Seconds() / d.cpu.Seconds()
		rss := d.rssMB() / b.rssMB()
		compared++
		minSpeed, maxSpeed = math.Min(minSpeed, speed), math.Max(maxSpeed, speed)
		minRSS, maxRSS = math.Min(minRSS, rss), math.Max(maxRSS, rss)
		minCPU, maxCPU = math.Min(minCPU, cpu), math.Max(maxCPU, cpu)
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.1f\t%.3f\t%.3f\t%.1f\t%.1f\t%.1f\t%.2f\t\n", r.name, d.wall.Seconds(), d.cpu.Seconds(), d.rssMB(),
			b.wall.Seconds(), b.cpu.Seconds(), b.rssMB(), speed, cpu, rss)
	}
	tw.Flush()
	if !withBCE {
		return
	}
	fmt.Println()
	if compared > 0 {
		verdict := func(ok bool) string {
			if ok {
				return "met"
			}
			return "NOT met"
		}
		fmt.Printf("%d scenarios compared: boincd-sim %.1f–%.1f× faster than BCE in wall time (target ≥ %g×: %s), %.1f–%.1f× in CPU time, at %.2f–%.2f of its max RSS (target ≤ 1: %s)\n",
			compared, minSpeed, maxSpeed, targetSpeedup, verdict(minSpeed >= targetSpeedup), minCPU, maxCPU, minRSS, maxRSS, verdict(maxRSS <= 1))
	}
	fmt.Println("\nnot compared (BCE cannot express them):")
	for _, r := range rows {
		if r.why != "" {
			fmt.Printf("  %s: %s\n", r.name, r.why)
		}
	}
	fmt.Println("\ndifferences left in the compared scenarios:")
	for _, r := range rows {
		if r.bce != nil && len(r.notes) > 0 {
			fmt.Printf("  %s: %s\n", r.name, strings.Join(r.notes, "; "))
		}
	}
	fmt.Println("\nfigures of merit, each emulator under its own client's policies (boincd: debts; BCE: the C++ client's REC):")
	tw = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tboincd idle\twasted\tshare viol.\tmonotony\tBCE idle\twasted\tshare viol.\tmonotony\t")
	for _, r := range rows {
		if r.bce == nil {
			continue
		}
		d, b := r.boincdFig, r.bceFig
		fmt.Fprintf(tw, "%s\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t\n", r.name, d.Idle, d.Wasted, d.Share, d.Monoton,
			b.IdleFrac, b.WastedFrac, b.ShareViolation, b.Monotony)
	}
	tw.Flush()
}

// measure runs cmd once and folds its times and RSS into r (fastest
// wall and CPU, largest RSS), keeping its stdout.
func measure(r *result, cmd *exec.Cmd) error {
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(cmd.Path), err, strings.TrimSpace(stderr.String()))
	}
	ps := cmd.ProcessState
	r.wall = min(r.wall, wall)
	r.cpu = min(r.cpu, ps.UserTime()+ps.SystemTime())
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		r.rssKB = max(r.rssKB, ru.Maxrss)
	}
	r.stdout = []byte(stdout.String())
	return nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "sim", "scenarios")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return dir, nil
			}
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("run it inside the boincd checkout")
		}
		dir = up
	}
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
