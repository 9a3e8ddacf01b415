// Command testreport reads `go test -json` on stdin and writes what CI
// needs to read: a line per package as go test writes it, the whole
// output of every test that failed, and at the end the packages and tests
// that took longest, so that each change sees what the suite costs
// (issue 32). It exits 1 when a test or a build failed, or when the
// stream ends in the middle of a package (go test was killed).
//
// With -json FILE it also keeps the raw stream, for comparing test lists
// between runs.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// event is one line of go test -json (cmd/test2json).
type event struct {
	Time        time.Time
	Action      string
	Package     string
	ImportPath  string // build-output, build-fail
	Test        string
	Elapsed     float64
	Output      string
	FailedBuild string
}

type testKey struct{ pkg, test string }

// report is what the stream has said so far.
type report struct {
	out       io.Writer
	module    string
	output    map[testKey][]string // a running test's output, kept until it ends
	pkgOutput map[string][]string  // output outside any test
	ended     map[string]bool
	started   map[string]bool
	pkgTimes  map[string]float64
	tests     []timed
	failed    []string
	why       []string // each failed test's own lines, repeated at the end
}

type timed struct {
	name    string
	seconds float64
}

func newReport(out io.Writer, module string) *report {
	return &report{out: out, module: module, output: map[testKey][]string{}, pkgOutput: map[string][]string{},
		ended: map[string]bool{}, started: map[string]bool{}, pkgTimes: map[string]float64{}}
}

func (r *report) short(pkg string) string {
	if s, ok := strings.CutPrefix(pkg, r.module+"/"); ok {
		return s
	}
	return pkg
}

func (r *report) add(e event) {
	switch e.Action {
	case "build-output":
		fmt.Fprint(r.out, e.Output)
		return
	case "build-fail":
		r.failed = append(r.failed, "build of "+e.ImportPath)
		return
	case "start":
		r.started[e.Package] = true
		return
	}
	if e.Test == "" {
		switch e.Action {
		case "output":
			r.pkgOutput[e.Package] = append(r.pkgOutput[e.Package], e.Output)
		case "pass", "fail", "skip":
			r.ended[e.Package] = true
			r.pkgTimes[e.Package] = e.Elapsed
			if e.Action == "fail" {
				r.failed = append(r.failed, "package "+r.short(e.Package))
				// go test without -v: the package's own lines (FAIL, panics,
				// TestMain's words) with the failed tests' output before them.
				for _, l := range r.pkgOutput[e.Package] {
					fmt.Fprint(r.out, l)
				}
			} else {
				// "ok  pkg 1.2s" or "?  pkg [no test files]": the last line.
				if o := r.pkgOutput[e.Package]; len(o) > 0 {
					fmt.Fprint(r.out, o[len(o)-1])
				}
			}
			delete(r.pkgOutput, e.Package)
		}
		return
	}
	k := testKey{e.Package, e.Test}
	switch e.Action {
	case "output":
		r.output[k] = append(r.output[k], e.Output)
	case "pass", "skip":
		delete(r.output, k)
		if !strings.Contains(e.Test, "/") && e.Action == "pass" {
			r.tests = append(r.tests, timed{r.short(e.Package) + " " + e.Test, e.Elapsed})
		}
	case "fail":
		for _, l := range r.output[k] {
			fmt.Fprint(r.out, l)
		}
		r.why = append(r.why, whyLines(r.short(e.Package)+" "+e.Test, r.output[k])...)
		delete(r.output, k)
		r.failed = append(r.failed, r.short(e.Package)+" "+e.Test)
		if !strings.Contains(e.Test, "/") {
			r.tests = append(r.tests, timed{r.short(e.Package) + " " + e.Test, e.Elapsed})
		}
	}
}

// finish writes the summary and says whether everything passed.
func (r *report) finish(top int) bool {
	ok := len(r.failed) == 0
	for pkg := range r.started {
		if !r.ended[pkg] {
			ok = false
			fmt.Fprintf(r.out, "testreport: %s never ended (go test killed or timed out); its last output:\n", r.short(pkg))
			for k, lines := range r.output {
				if k.pkg == pkg {
					fmt.Fprintf(r.out, "--- %s (running)\n", k.test)
					for _, l := range lines[max(0, len(lines)-20):] {
						fmt.Fprint(r.out, l)
					}
				}
			}
			for _, l := range r.pkgOutput[pkg] {
				fmt.Fprint(r.out, l)
			}
		}
	}
	var pkgs []timed
	for p, s := range r.pkgTimes {
		pkgs = append(pkgs, timed{r.short(p), s})
	}
	byTime := func(a, b timed) int { return cmp.Or(cmp.Compare(b.seconds, a.seconds), cmp.Compare(a.name, b.name)) }
	slices.SortFunc(pkgs, byTime)
	slices.SortFunc(r.tests, byTime)
	fmt.Fprintf(r.out, "\n== the %d slowest packages (seconds their tests ran)\n", min(top, len(pkgs)))
	for _, p := range pkgs[:min(top, len(pkgs))] {
		fmt.Fprintf(r.out, "%8.1f  %s\n", p.seconds, p.name)
	}
	fmt.Fprintf(r.out, "== the %d slowest tests (parallel ones overlap)\n", min(top, len(r.tests)))
	for _, t := range r.tests[:min(top, len(r.tests))] {
		fmt.Fprintf(r.out, "%8.1f  %s\n", t.seconds, t.name)
	}
	if len(r.failed) > 0 {
		fmt.Fprintf(r.out, "== failed: %s\n", strings.Join(r.failed, ", "))
	}
	for _, l := range r.why {
		fmt.Fprintln(r.out, l)
	}
	return ok
}

// whyLines picks, from a failed test's output, the lines its t.Error,
// t.Fatal and t.Log calls began ("    x_test.go:12: message"), leaving
// out their continuation lines (the daemon logs a test dumps when it
// fails), so that the end of a CI log, which is all that may be shown of
// it, still says why each test failed.
func whyLines(test string, output []string) []string {
	const keep, width = 8, 300
	var lines []string
	for _, o := range output {
		l := strings.TrimRight(o, "\n")
		rest, ok := strings.CutPrefix(l, "    ")
		if !ok || rest == "" || rest[0] == ' ' || rest[0] == '\t' {
			continue
		}
		file, _, found := strings.Cut(rest, ":")
		if !found || !strings.HasSuffix(file, ".go") {
			continue
		}
		if len(l) > width {
			l = l[:width] + " …"
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return nil
	}
	if len(lines) > keep {
		lines = lines[len(lines)-keep:]
	}
	return append([]string{"== why " + test + " failed (its last lines of its own):"}, lines...)
}

func main() {
	raw := flag.String("json", "", "also write the raw go test -json stream to this `file`")
	top := flag.Int("top", 10, "how many of the slowest packages and tests to list")
	module := flag.String("module", "github.com/boincd/boincd", "module path left off package names")
	flag.Parse()
	in := io.Reader(os.Stdin)
	if *raw != "" {
		f, err := os.Create(*raw)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
		defer f.Close()
		in = io.TeeReader(os.Stdin, f)
	}
	r := newReport(os.Stdout, *module)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			// go test writes some failures as plain text (a package that
			// does not build, before Go 1.24): pass them on.
			fmt.Println(sc.Text())
			continue
		}
		r.add(e)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "testreport: reading go test -json:", err)
		os.Exit(2)
	}
	if !r.finish(*top) {
		os.Exit(1)
	}
}
