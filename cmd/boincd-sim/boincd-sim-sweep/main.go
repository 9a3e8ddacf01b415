// Command boincd-sim-sweep runs the policy study (docs/policy-study.md):
// the six parameter sweeps after Kondo, Anderson and McLeod (e-Science
// 2007), every point over several seeds, in parallel on all cores; a CSV
// per experiment and a PNG per figure go to --out, and --compare adds the
// before/after table of boincd's default.
//
//	boincd-sim-sweep [--out DIR] [--seeds N] [--quick] [--only ID,...] [--compare]
//
// It is what "boincd-sim --sweep" runs. It is a command of its own so that
// the emulator, boincd-sim, links none of the plotting stack (gonum/plot,
// go-latex, fpdf, svgo): their fonts and package initialisation cost every
// emulator run about 5 MB of resident memory and a few milliseconds.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/boincd/boincd/sim/study"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command; args exclude the program name.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("boincd-sim-sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: boincd-sim-sweep [--out DIR] [--seeds N] [--quick] [--only ID,...] [--compare]

Runs boincd's policy study (docs/policy-study.md), as boincd-sim --sweep
does: six parameter sweeps after Kondo, Anderson and McLeod (e-Science
2007), every point over several seeds, in parallel; a CSV per experiment and
a PNG per figure go to --out.

`)
		fs.PrintDefaults()
	}
	var (
		quick, compare bool
		outDir, only   string
		seeds          int
	)
	fs.StringVar(&outDir, "out", "policy-study", "directory for the CSVs and plots")
	fs.IntVar(&seeds, "seeds", 5, "seeds per point")
	fs.BoolVar(&quick, "quick", false, "a few points per experiment and 25 simulated days")
	fs.StringVar(&only, "only", "", "comma-separated experiment IDs or numbers (default: all; none: only --compare)")
	fs.BoolVar(&compare, "compare", false, "also compare boincd's default before and after the study's change (and REC) on the study's suite")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintln(stderr, "boincd-sim: --sweep takes no scenario file")
		return 2
	}
	return runSweep(outDir, only, seeds, quick, compare, stdout, stderr)
}

// runSweep is the policy study.
func runSweep(outDir, only string, seeds int, quick, compare bool, stdout, stderr io.Writer) int {
	if seeds < 1 || seeds > 1000 {
		fmt.Fprintf(stderr, "boincd-sim: --seeds %d: want 1..1000\n", seeds)
		return 2
	}
	exps, err := pickExperiments(study.Experiments(quick), only)
	if compare && only != "" && only == "none" {
		exps, err = nil, nil
	}
	if err != nil {
		fmt.Fprintln(stderr, "boincd-sim: --only:", err)
		return 2
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		fmt.Fprintln(stderr, "boincd-sim:", err)
		return 1
	}
	cfg := study.Config{Seeds: seeds}
	if quick {
		cfg.Days = 25
	}
	last := time.Now()
	cfg.Progress = func(done, total int) {
		if time.Since(last) > 5*time.Second || done == total {
			last = time.Now()
			fmt.Fprintf(stderr, "policy study: %d/%d runs\n", done, total)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	res, err := study.Run(ctx, exps, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "boincd-sim:", err)
		return 1
	}
	for i := range res {
		files, err := res[i].Write(outDir)
		if err != nil {
			fmt.Fprintln(stderr, "boincd-sim:", err)
			return 1
		}
		for _, f := range files {
			fmt.Fprintln(stdout, f)
		}
	}
	if compare {
		cmp, err := study.Compare(ctx, study.Suite(quick), []study.Variant{study.Before, study.After, study.REC}, cfg)
		if err != nil {
			fmt.Fprintln(stderr, "boincd-sim:", err)
			return 1
		}
		path := filepath.Join(outDir, "default_before_after.md")
		f, err := os.Create(path)
		if err == nil {
			err = cmp.WriteMarkdown(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintln(stderr, "boincd-sim:", err)
			return 1
		}
		fmt.Fprintln(stdout, path)
	}
	fmt.Fprintf(stderr, "policy study: %d experiments, %d seeds per point, %s\n", len(exps), seeds, time.Since(start).Round(time.Second))
	return 0
}

// pickExperiments selects by ID ("exp3_buffer") or number ("3").
func pickExperiments(all []*study.Experiment, only string) ([]*study.Experiment, error) {
	if strings.TrimSpace(only) == "" {
		return all, nil
	}
	var out []*study.Experiment
	for _, w := range strings.Split(only, ",") {
		w = strings.TrimSpace(w)
		found := false
		for _, e := range all {
			if e.ID == w || strings.HasPrefix(e.ID, "exp"+w+"_") {
				out = append(out, e)
				found = true
			}
		}
		if !found {
			ids := make([]string, len(all))
			for i, e := range all {
				ids[i] = e.ID
			}
			return nil, fmt.Errorf("no experiment %q: want one of %s (or its number)", w, strings.Join(ids, ", "))
		}
	}
	return out, nil
}
