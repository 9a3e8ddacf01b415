package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/boincd/boincd/sim/study"
)

// runSweep is "boincd-sim --sweep": the policy study.
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
