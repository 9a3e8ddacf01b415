package statefile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
)

// crashChildEnv makes the test binary act as the committing child of
// TestCrashSafety instead of running tests.
const crashChildEnv = "STATEFILE_CRASH_CHILD"

const (
	crashURL     = "http://crash.example/"
	crashResults = 20
)

func TestMain(m *testing.M) {
	if path := os.Getenv(createChildEnv); path != "" {
		s, err := Open(path, Options{LockTimeout: 10 * time.Second})
		if err != nil {
			fmt.Fprintln(os.Stderr, "create child:", err)
			os.Exit(1)
		}
		_ = s.Close()
		os.Exit(0)
	}
	if path := os.Getenv(crashChildEnv); path != "" {
		if err := crashChild(path); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashChild commits batches forever, with real fsyncs, until killed. Batch
// number seq sets Restarts = seq on results r00..r19, replaces the result
// x<seq-1> by x<seq>, and sets meta "seq" = seq; stderr of random size makes
// every batch rewrite a different set of pages.
func crashChild(path string) error {
	s, err := Open(path, Options{LockTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	snap, err := s.Load()
	if err != nil {
		return err
	}
	seq := 0
	if raw, ok := snap.Meta["seq"]; ok {
		if err := json.Unmarshal(raw, &seq); err != nil {
			return fmt.Errorf("meta seq %q: %w", raw, err)
		}
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid())))
	for first := true; ; first = false {
		seq++
		var b Batch
		for i := 0; i < crashResults; i++ {
			b.PutResult(&boinc.Result{
				ProjectURL: crashURL, Name: fmt.Sprintf("r%02d", i), Restarts: seq,
				StderrOut: strings.Repeat("e", rng.IntN(6000)),
			})
		}
		b.PutResult(&boinc.Result{ProjectURL: crashURL, Name: fmt.Sprintf("x%d", seq), Restarts: seq})
		b.DeleteResult(crashURL + "\x00" + fmt.Sprintf("x%d", seq-1))
		b.PutMeta("seq", seq)
		if err := s.Commit(&b); err != nil {
			return err
		}
		if first {
			fmt.Println("ready", seq)
		}
	}
}

func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes; skipped with -short")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "boincd.db")
	rng := rand.New(rand.NewPCG(5, 6))
	lastSeq := 0
	for round := 0; round < 8; round++ {
		readySeq := runAndKill(t, exe, path, time.Duration(rng.IntN(80))*time.Millisecond)

		s, err := Open(path, Options{LockTimeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		snap, err := s.Load()
		if err != nil {
			t.Fatalf("round %d: load after SIGKILL: %v", round, err)
		}
		seq, err := strconv.Atoi(string(snap.Meta["seq"]))
		if err != nil {
			t.Fatalf("round %d: meta seq %q: %v", round, snap.Meta["seq"], err)
		}
		if seq < readySeq || seq <= lastSeq {
			t.Fatalf("round %d: meta seq %d went back (child had committed %d, previous round %d)", round, seq, readySeq, lastSeq)
		}
		if len(snap.Results) != crashResults+1 {
			t.Fatalf("round %d: %d results, want %d", round, len(snap.Results), crashResults+1)
		}
		for _, r := range snap.Results {
			if r.Restarts != seq {
				t.Fatalf("round %d: result %s carries batch %d, meta says %d: a batch was torn", round, r.Name, r.Restarts, seq)
			}
			if strings.HasPrefix(r.Name, "x") && r.Name != fmt.Sprintf("x%d", seq) {
				t.Fatalf("round %d: result %s present at seq %d", round, r.Name, seq)
			}
		}
		t.Logf("round %d: killed at seq %d, consistent", round, seq)
		lastSeq = seq
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// runAndKill starts the committing child, waits until it has committed at
// least once, lets it run for delay, and kills it with SIGKILL. It returns
// the sequence number the child reported as committed.
func runAndKill(t *testing.T, exe, path string, delay time.Duration) int {
	t.Helper()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	defer func() {
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	var readySeq int
	if _, scanErr := fmt.Sscanf(line, "ready %d", &readySeq); err != nil || scanErr != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		waited = true
		t.Fatalf("child did not get ready (%q, %v): %s", line, err, stderr.String())
	}
	time.Sleep(delay)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waited = true
	if cmd.ProcessState.Success() {
		t.Fatalf("child exited on its own: %s", stderr.String())
	}
	return readySeq
}
