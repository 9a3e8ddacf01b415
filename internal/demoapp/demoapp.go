// Package demoapp is a real CPU-bound science app built on boincapi, used
// by the demo project and the end-to-end tests. Its job is a SHA-256 hash
// chain: the seed and the input file are hashed, then the digest is
// re-hashed a number of times sized to the requested CPU time. It
// checkpoints its position, resumes from the checkpoint after a restart,
// reports progress and writes the final digest to its output.
//
// The boincd-demo binary is a multi-call binary: it runs Main when the base
// name of argv[0] starts with BinaryPrefix (app versions are installed as
// boincd_demoapp_<version>_<platform>).
package demoapp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/boincd/boincd/boincapi"
	"github.com/boincd/boincd/internal/atomicfile"
)

// BinaryPrefix is the argv[0] base-name prefix that selects this app.
const BinaryPrefix = "boincd_demoapp"

// RunIfInvoked runs the app and exits when this executable was started
// under the app's name (argv[0]'s base name begins with BinaryPrefix);
// otherwise it returns at once. The multi-call boincd-demo binary and
// the test binaries that install themselves as the app call it first.
func RunIfInvoked() {
	if strings.HasPrefix(filepath.Base(os.Args[0]), BinaryPrefix) {
		os.Exit(Main(os.Args[1:]))
	}
}

// Logical file names and the checkpoint file in the slot.
const (
	InputName      = "in"
	OutputName     = "out"
	CheckpointName = "checkpoint.json"
)

const (
	defaultSeconds   = 10.0
	defaultHostFpops = 1e9
	calibrateFor     = 50 * time.Millisecond
	batchDuration    = 10 * time.Millisecond // work between Wait calls
	stateVersion     = 1
)

// state is what checkpoint.json holds.
type state struct {
	Version int    `json:"version"`
	Seed    uint64 `json:"seed"`
	Total   uint64 `json:"total"`
	Done    uint64 `json:"done"`
	Hash    string `json:"hash"`
	Batch   uint64 `json:"batch"`
	InBytes int64  `json:"in_bytes"` // -1: no input file
}

type config struct {
	seconds float64
	fpops   float64
	seed    uint64
	// trickleUp, when set, is sent as a trickle-up message (variety
	// "demo") when the app starts; trickleDownWait > 0 makes the app,
	// its work done, wait up to that long for a trickle-down and copy it
	// to stderr (trickle.go).
	trickleUp       string
	trickleDownWait time.Duration
	// uploadEarly > 0: with the output written, ask for its upload
	// (boinc_upload_file) and wait up to that long for it to be over
	// before finishing.
	uploadEarly time.Duration
}

// Main runs the app and returns the process exit status for failures; on
// success it ends the process through boincapi's Finish. args are the
// command-line arguments; a leading program name (anything not starting
// with "-") is skipped, so both os.Args and os.Args[1:] work.
func Main(args []string) int {
	return run(context.Background(), args, boincapi.Options{MinCheckpointPeriod: time.Second}, os.Stderr)
}

func run(ctx context.Context, args []string, opts boincapi.Options, stderr io.Writer) int {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		args = args[1:]
	}
	cfg, err := parseArgs(args, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "demoapp: %v\n", err)
		return 2
	}
	cwd := opts.Dir
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	fmt.Fprintf(stderr, "demoapp: start pid=%d cwd=%s args=%s\n", os.Getpid(), cwd, strings.Join(args, " "))

	app, err := boincapi.InitWith(opts)
	if err != nil {
		fmt.Fprintf(stderr, "demoapp: %v\n", err)
		return 1
	}
	if cfg.trickleUp != "" {
		if err := app.SendTrickleUp("demo", cfg.trickleUp); err != nil {
			fmt.Fprintf(stderr, "demoapp: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "demoapp: sent trickle-up %q\n", cfg.trickleUp)
	}
	code, err := compute(ctx, app, cfg, opts.Dir, stderr)
	if err == nil && cfg.trickleDownWait > 0 {
		code, err = awaitTrickleDown(ctx, app, opts.Dir, cfg.trickleDownWait, stderr)
	}
	if err == nil && cfg.uploadEarly > 0 {
		code, err = uploadEarly(ctx, app, cfg.uploadEarly, stderr)
	}
	if err != nil {
		if errors.Is(err, boincapi.ErrExited) {
			// The client told us to quit or abort and the exit already
			// happened (only observable when Options.Exit returns).
			return 0
		}
		fmt.Fprintf(stderr, "demoapp: %v\n", err)
		app.Finish(code, err.Error())
		return code
	}
	fmt.Fprintln(stderr, "demoapp: done")
	app.Finish(0, "")
	return 0
}

func parseArgs(args []string, stderr io.Writer) (config, error) {
	fl := flag.NewFlagSet("demoapp", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var cfg config
	fl.Float64Var(&cfg.seconds, "seconds", 0, "approximate CPU seconds of work")
	fl.Float64Var(&cfg.fpops, "fpops", 0, "floating-point operations of work (converted with the host's p_fpops)")
	fl.Uint64Var(&cfg.seed, "seed", 1, "seed of the hash chain")
	fl.StringVar(&cfg.trickleUp, "trickle-up", "", "send this text as a trickle-up message at the start")
	fl.DurationVar(&cfg.trickleDownWait, "trickle-down-wait", 0, "after the work, wait this long for a trickle-down message")
	fl.DurationVar(&cfg.uploadEarly, "upload-early", 0, "upload the output before finishing, waiting this long for the upload")
	if err := fl.Parse(args); err != nil {
		return cfg, fmt.Errorf("arguments: %w", err)
	}
	if fl.NArg() > 0 {
		return cfg, fmt.Errorf("arguments: unexpected %q", fl.Arg(0))
	}
	if cfg.seconds < 0 || cfg.seconds != cfg.seconds || cfg.seconds > 1e7 {
		return cfg, fmt.Errorf("arguments: --seconds %v out of range", cfg.seconds)
	}
	if cfg.fpops < 0 || cfg.fpops != cfg.fpops || cfg.fpops > 1e20 {
		return cfg, fmt.Errorf("arguments: --fpops %v out of range", cfg.fpops)
	}
	return cfg, nil
}

// compute runs (or resumes) the hash chain and writes the output. The int
// is the exit status to use when err is not nil.
func compute(ctx context.Context, app *boincapi.App, cfg config, dir string, stderr io.Writer) (int, error) {
	ckptPath := filepath.Join(dir, CheckpointName)
	st, resumed, err := loadCheckpoint(ckptPath, cfg.seed)
	if err != nil {
		fmt.Fprintf(stderr, "demoapp: ignoring checkpoint: %v\n", err)
	}
	if resumed {
		pct := 100 * float64(st.Done) / float64(st.Total)
		fmt.Fprintf(stderr, "demoapp: resumed from checkpoint at %.0f%%\n", pct)
	} else {
		h, n, err := initialHash(app, cfg.seed)
		if err != nil {
			return 1, err
		}
		rate := calibrate()
		secs := workSeconds(cfg, app.InitData())
		total := uint64(secs * rate)
		if total < 1 {
			total = 1
		}
		batch := uint64(rate * batchDuration.Seconds())
		if batch < 1 {
			batch = 1
		}
		st = state{Version: stateVersion, Seed: cfg.seed, Total: total, Hash: hex.EncodeToString(h[:]), Batch: batch, InBytes: n}
		fmt.Fprintf(stderr, "demoapp: %d iterations (%.1f s at %.0f hashes/s)\n", total, secs, rate)
	}

	raw, err := hex.DecodeString(st.Hash)
	if err != nil || len(raw) != sha256.Size {
		return 1, fmt.Errorf("checkpoint %s: bad hash %q", ckptPath, st.Hash)
	}
	var h [sha256.Size]byte
	copy(h[:], raw)
	for st.Done < st.Total {
		if err := app.Wait(ctx); err != nil {
			return 1, err
		}
		n := min(st.Batch, st.Total-st.Done)
		for i := uint64(0); i < n; i++ {
			h = sha256.Sum256(h[:])
		}
		st.Done += n
		app.FractionDone(float64(st.Done) / float64(st.Total))
		if st.Done < st.Total && app.TimeToCheckpoint(ctx) {
			st.Hash = hex.EncodeToString(h[:])
			app.BeginCriticalSection()
			err := saveCheckpoint(ckptPath, st)
			if err == nil {
				app.Checkpoint(0)
			}
			app.EndCriticalSection()
			if err != nil {
				return 1, err
			}
		}
	}
	if err := writeOutput(app, st, h); err != nil {
		return 1, err
	}
	return 0, nil
}

// workSeconds picks the CPU time to spend: --seconds, else --fpops (or the
// workunit's rsc_fpops_est) divided by the host's measured speed.
func workSeconds(cfg config, d *boincapi.InitData) float64 {
	if cfg.seconds > 0 {
		return cfg.seconds
	}
	hostFpops := defaultHostFpops
	fpops := cfg.fpops
	if d != nil {
		if d.Host.PFpops > 0 {
			hostFpops = d.Host.PFpops
		}
		if fpops == 0 {
			fpops = d.RscFpopsEst
		}
	}
	if fpops > 0 {
		return fpops / hostFpops
	}
	return defaultSeconds
}

// calibrate measures hashes per CPU-bound second on this machine. It
// keeps the fastest of short slices, as the CPU benchmarks do: a slice
// during which the process was descheduled (a loaded host) measures wall
// time, not computing, and would make the task far shorter than asked.
func calibrate() float64 {
	const slices = 10
	h := sha256.Sum256([]byte("calibrate"))
	best := 0.0
	for range slices {
		var n uint64
		start := time.Now()
		for time.Since(start) < calibrateFor/slices {
			for i := 0; i < 100; i++ {
				h = sha256.Sum256(h[:])
			}
			n += 100
		}
		best = max(best, float64(n)/time.Since(start).Seconds())
	}
	return best
}

// initialHash is SHA-256(seed || input); without an input file the seed
// alone. It returns the input size (-1 without input).
func initialHash(app *boincapi.App, seed uint64) ([sha256.Size]byte, int64, error) {
	var out [sha256.Size]byte
	hs := sha256.New()
	hs.Write([]byte(strconv.FormatUint(seed, 10)))
	n := int64(-1)
	path, err := app.Resolve(InputName)
	if err != nil {
		return out, n, fmt.Errorf("input %q: %w", InputName, err)
	}
	f, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return out, n, fmt.Errorf("input %q: %w", path, err)
	default:
		defer f.Close()
		n, err = io.Copy(hs, f)
		if err != nil {
			return out, n, fmt.Errorf("input %q: %w", path, err)
		}
	}
	copy(out[:], hs.Sum(nil))
	return out, n, nil
}

func loadCheckpoint(path string, seed uint64) (state, bool, error) {
	var st state
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return state{}, false, fmt.Errorf("parse %s: %w", path, err)
	}
	switch {
	case st.Version != stateVersion:
		return state{}, false, fmt.Errorf("%s: version %d, want %d", path, st.Version, stateVersion)
	case st.Seed != seed:
		return state{}, false, fmt.Errorf("%s: seed %d, this run has %d", path, st.Seed, seed)
	case st.Total == 0 || st.Done > st.Total || st.Batch == 0:
		return state{}, false, fmt.Errorf("%s: inconsistent progress %d/%d", path, st.Done, st.Total)
	}
	return st, true, nil
}

// saveCheckpoint writes a temporary file and renames it, so a kill at any
// moment leaves either the old or the new checkpoint.
func saveCheckpoint(path string, st state) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

func writeOutput(app *boincapi.App, st state, h [sha256.Size]byte) error {
	path, err := app.Resolve(OutputName)
	if err != nil {
		return fmt.Errorf("output %q: %w", OutputName, err)
	}
	in := "none"
	if st.InBytes >= 0 {
		in = strconv.FormatInt(st.InBytes, 10)
	}
	body := fmt.Sprintf("demoapp output\nseed: %d\niterations: %d\ninput bytes: %s\nresult: %s\n",
		st.Seed, st.Total, in, hex.EncodeToString(h[:]))
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		return fmt.Errorf("output %q: %w", path, err)
	}
	return nil
}
