package daemon

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/container"
	guiclient "github.com/boincd/boincd/guirpc/client"
	"github.com/boincd/boincd/platform"
	"github.com/boincd/boincd/statefile"
)

// Big queues (issue 18; BOINC issue #6332 reports the C++ client spending
// a core for a minute on such queues). The state: 20 projects, 10,000
// tasks, of which 1,000 are ready to run (50 per project, inputs present)
// and 9,000 computed and waiting to be reported; cc_config.xml describes
// a 64-CPU host, so 64 tasks run (a shell script that sleeps). The
// projects' servers do not answer, as on a host that is offline.
const (
	bqProjects = 20
	bqTasks    = 10000
	bqReady    = 1000
	bqNCPUs    = 64
)

// bigQueue is one daemon on that state, shared by the sub-benchmarks.
type bigQueue struct {
	d       *Daemon
	gui     *guiclient.Client
	cancel  context.CancelFunc
	done    chan error
	heapPer float64 // live heap per task, bytes
	rssPer  float64 // resident memory per task, bytes
	setup   time.Duration
}

// BenchmarkBigQueue reports, for that state: the GUI RPC replies the
// Manager and boinctui poll (get_state, get_results), one decision pass
// as the owner loop runs it (the round-robin simulation built from the
// state, priorities, the CPU schedule and the work-fetch choice), the
// commit of one event (a result changed, fsync'd), one whole step of the
// owner loop, and the memory each task costs. Targets: no GUI reply over
// 100 ms, a decision pass under 10 ms.
//
//	go test -run '^$' -bench BigQueue -benchtime 20x ./daemon/
func BenchmarkBigQueue(b *testing.B) {
	q, err := startBigQueue(b.TempDir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		q.gui.Close()
		q.cancel()
		if err := <-q.done; err != nil {
			b.Errorf("daemon: %v", err)
		}
	})
	ctx := context.Background()

	// The reply as a manager receives it: request sent, whole reply read
	// (parsing it is the manager's cost, not the daemon's).
	for _, op := range []string{"get_state", "get_results"} {
		b.Run(op, func(b *testing.B) {
			var n int
			for b.Loop() {
				reply, err := q.gui.Call(ctx, "<"+op+"/>")
				if err != nil {
					b.Fatal(err)
				}
				n = len(reply)
			}
			if got := bytes.Count(reply0(q, ctx, op), []byte("<result>")); got != bqTasks {
				b.Fatalf("%s: %d results, want %d", op, got, bqTasks)
			}
			b.ReportMetric(float64(n), "reply-bytes")
		})
	}
	b.Run("decision_pass", func(b *testing.B) {
		var elapsed time.Duration
		for b.Loop() {
			err := q.d.query(ctx, func() {
				now := time.Now()
				t0 := time.Now()
				// The schedule with nothing to change (the same tasks stay
				// on the CPUs) and the work-fetch choice, as step runs them.
				q.d.schedule(now)
				q.d.chooseWork(now)
				elapsed += time.Since(t0)
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N), "ns/pass-on-owner")
	})
	b.Run("owner_step", func(b *testing.B) {
		var elapsed time.Duration
		for b.Loop() {
			err := q.d.query(ctx, func() {
				t0 := time.Now()
				q.d.step(time.Now())
				elapsed += time.Since(t0)
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N), "ns/step-on-owner")
	})
	b.Run("commit_one_event", func(b *testing.B) {
		var elapsed time.Duration
		var r *boinc.Result
		_ = q.d.query(ctx, func() {
			for _, x := range q.d.st.results {
				if x.Phase == boinc.PhaseUploaded {
					r = x
					break
				}
			}
		})
		i := 0
		for b.Loop() {
			i++
			err := q.d.query(ctx, func() {
				t0 := time.Now()
				r.PeakDiskUsage = float64(i)
				q.d.batch.PutResult(r)
				if !q.d.flush() {
					b.Error("commit failed")
				}
				elapsed += time.Since(t0)
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N), "ns/commit-on-owner")
	})
	b.Run("memory", func(b *testing.B) {
		for b.Loop() {
		}
		b.ReportMetric(q.heapPer, "heap-B/task")
		b.ReportMetric(q.rssPer, "rss-B/task")
		b.ReportMetric(q.setup.Seconds(), "s-to-load")
	})
	b.Run("idle_cpu", func(b *testing.B) {
		// What the daemon spends per second of wall time with the queue
		// loaded, nothing changing: the owner loop's periodic work.
		for b.Loop() {
		}
		var ru0, ru1 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		time.Sleep(10 * time.Second)
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) * time.Nanosecond
		b.ReportMetric(cpu.Seconds()/10*100, "%cpu")
	})
}

func reply0(q *bigQueue, ctx context.Context, op string) []byte {
	b, _ := q.gui.Call(ctx, "<"+op+"/>")
	return b
}

func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func rssBytes() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, res int64
	fmt.Sscan(string(b), &size, &res)
	return float64(res * int64(os.Getpagesize()))
}

// startBigQueue writes the state and starts the daemon on it, with the
// production intervals (1 s poll).
func startBigQueue(tempDir func() string) (*bigQueue, error) {
	dir := filepath.Join(tempDir(), "data")
	heap0, rss0 := liveHeap(), rssBytes()
	cfg, err := writeBigQueue(dir)
	if err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		cfg.AllowRootApps = true
	}
	opt := Options{
		DataDir: dir, Config: cfg,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
		GUIRPCAddr:        "127.0.0.1:0",
		BenchmarkDuration: -1,
		QuitGrace:         time.Second,
		Containers:        container.Exec{Env: []string{"PATH="}},
	}
	d, err := New(opt)
	if err != nil {
		return nil, err
	}
	q := &bigQueue{d: d, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	q.cancel = cancel
	t0 := time.Now()
	go func() { q.done <- d.Run(ctx) }()
	// Wait for the GUI RPC port and for the 64 tasks to run.
	var addr string
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		var running int
		qctx, qc := context.WithTimeout(ctx, 10*time.Second)
		err := d.query(qctx, func() {
			running = len(d.active)
			addr = d.guiAddr
		})
		qc()
		if err == nil && running >= bqNCPUs && addr != "" {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	q.setup = time.Since(t0)
	if addr == "" {
		return nil, fmt.Errorf("big queue: no GUI RPC address after %s", q.setup)
	}
	q.gui, err = guiclient.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	q.heapPer = float64(liveHeap()-heap0) / bqTasks
	q.rssPer = (rssBytes() - rss0) / bqTasks
	return q, nil
}

// writeBigQueue writes the state file, the project files and
// cc_config.xml, and returns the config that attaches the projects.
func writeBigQueue(dir string) (*config.Config, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cc := fmt.Sprintf("<cc_config><options><ncpus>%d</ncpus></options></cc_config>\n", bqNCPUs)
	if err := os.WriteFile(filepath.Join(dir, "cc_config.xml"), []byte(cc), 0o644); err != nil {
		return nil, err
	}
	store, err := statefile.Open(filepath.Join(dir, "boincd.db"), statefile.Options{NoSync: true})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	cfg := config.Default()
	cfg.UnsignedAppsOK = true
	var batch statefile.Batch
	present := func(url, name string, data []byte, exec bool) (*boinc.FileInfo, error) {
		path := filepath.Join(dir, "projects", boinc.EscapeProjectURL(url), name)
		if err := os.WriteFile(path, data, 0o755); err != nil {
			return nil, err
		}
		m, s := md5.Sum(data), sha256.Sum256(data)
		return &boinc.FileInfo{ProjectURL: url, Name: name, MD5: hex.EncodeToString(m[:]), NBytes: float64(len(data)),
			Executable: exec, Status: boinc.FilePresent, SHA256: hex.EncodeToString(s[:]), VerifiedBytes: int64(len(data)),
			DownloadURLs: []string{url + "download/" + name}}, nil
	}
	now := time.Now()
	perProject := bqTasks / bqProjects
	readyPer := bqReady / bqProjects
	for p := range bqProjects {
		url := fmt.Sprintf("http://127.0.0.1:9/bigqueue%02d/", p)
		cfg.Projects = append(cfg.Projects, config.Project{URL: url, Authenticator: "bq-key", ResourceShare: float64(50 + 10*p)})
		if err := os.MkdirAll(filepath.Join(dir, "projects", boinc.EscapeProjectURL(url)), 0o755); err != nil {
			return nil, err
		}
		batch.PutProject(&boinc.Project{MasterURL: url, ProjectName: fmt.Sprintf("Big Queue %02d", p), ResourceShare: float64(50 + 10*p),
			Authenticator: "bq-key", SchedulerURLs: []string{url + "cgi-bin/cgi"}, HostID: int64(1000 + p), MinRPCTime: now.Add(24 * time.Hour)})
		batch.PutApp(&boinc.App{ProjectURL: url, Name: "bq", UserFriendlyName: "Big queue app"})
		appFile := "bq_1.00_" + platform.This() + ".sh"
		fi, err := present(url, appFile, []byte("#!/bin/sh\nexec sleep 100000\n"), true)
		if err != nil {
			return nil, err
		}
		batch.PutFile(fi)
		batch.PutAppVersion(&boinc.AppVersion{ProjectURL: url, AppName: "bq", VersionNum: 100, Platform: platform.This(),
			AvgNCPUs: 1, Flops: 1e9, FileRefs: []boinc.FileRef{{FileName: appFile, MainProgram: true}}})
		for i := range perProject {
			wu := fmt.Sprintf("bq%02d_wu_%05d", p, i)
			in, err := present(url, wu+"_in", []byte(wu+"\n"), false)
			if err != nil {
				return nil, err
			}
			batch.PutFile(in)
			out := wu + "_0_r0"
			outFI := &boinc.FileInfo{ProjectURL: url, Name: out, MaxNBytes: 1e6, UploadURLs: []string{url + "cgi-bin/file_upload_handler"}}
			batch.PutWorkunit(&boinc.Workunit{ProjectURL: url, Name: wu, AppName: "bq", InputFiles: []boinc.FileRef{{FileName: wu + "_in", OpenName: "in"}},
				RscFpopsEst: 3.6e12 * (1 + float64(i%7)), RscFpopsBound: 1e15, RscMemoryBound: 1e8, RscDiskBound: 1e8})
			r := &boinc.Result{ProjectURL: url, Name: wu + "_0", WUName: wu, Platform: platform.This(), VersionNum: 100,
				OutputFiles: []boinc.FileRef{{FileName: out, OpenName: "out"}}, Slot: -1,
				ReportDeadline: now.Add(time.Duration(3+i%11) * 24 * time.Hour), ReceivedTime: now.Add(-time.Hour), Phase: boinc.PhaseDownloaded}
			if i >= readyPer {
				// Computed and uploaded, waiting for the report.
				r.Phase, r.WireState = boinc.PhaseUploaded, 5
				r.FinalCPUTime, r.FinalElapsedTime, r.CompletedTime = 3600, 3700, now.Add(-30*time.Minute)
				outFI.Status, outFI.Uploaded, outFI.NBytes, outFI.MD5 = boinc.FilePresent, true, 1000, "0123456789abcdef0123456789abcdef"
			}
			batch.PutFile(outFI)
			batch.PutResult(r)
		}
		if err := store.Commit(&batch); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}
