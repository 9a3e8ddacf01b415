package testproject

import (
	"crypto/md5"
	"crypto/rsa"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/platform"
)

// Config describes the project the server pretends to be. The zero value of
// every optional field picks the default documented on it.
type Config struct {
	// Name is the <project_name>; default "boincd test project".
	Name string
	// TrickleEcho answers every trickle-up with a trickle-down of the
	// same text for its task, as BOINC's trickle_echo daemon does.
	TrickleEcho bool
	// Apps are the applications handed out; at least one. Jobs use them
	// in turn (job n uses Apps[(n-1) % len(Apps)]) among the apps for the
	// resources the request asks work for: CPU apps answer cpu_req_secs /
	// cpu_req_instances, NVIDIA apps (App.NGPUs > 0) answer
	// <coproc_cuda>'s req_secs / req_instances.
	Apps []App
	Job  JobTemplate
	// TotalJobs caps the jobs handed out over the server's life; 0 means
	// unlimited.
	TotalJobs int
	// MaxJobsPerRPC caps the jobs in one reply; default 4. Within the cap
	// jobs are added until the requested seconds (the larger of
	// cpu_req_secs and work_req_seconds; for NVIDIA apps <coproc_cuda>'s
	// req_secs) and instances are covered, each job counting FpopsEst /
	// app flops seconds and AvgNCPUs (NGPUs) instances.
	MaxJobsPerRPC int
	// MaxInProgress caps the jobs a host holds unreported, as a real
	// project's config.xml <max_wus_in_progress> does: a request that
	// would exceed it gets no more jobs and the real scheduler's
	// message, "This computer has reached a limit on tasks in progress".
	// 0 means no cap.
	MaxInProgress int
	// RequestDelay is sent as <request_delay> in every reply; it is the
	// minimum time before the client's next RPC. 0 means the default of
	// 5 s (what the reference server sent); a negative value sends 0, which
	// lets tests run back-to-back RPCs.
	RequestDelay time.Duration
	// Faults are injected into the next requests; SetFaults replaces them.
	Faults Faults
	// Logger receives request logs; nil discards them.
	Logger *slog.Logger
	// Authenticator is the one accepted account key; "" accepts any
	// non-empty key.
	Authenticator string
	// Accounts are the project's user accounts, served by the web RPCs
	// the Add Project wizard uses (account.go: get_project_config.php,
	// lookup_account.php, create_account.php); create_account.php adds
	// to them.
	Accounts []Account
	// AccountCreationDisabled makes create_account.php refuse new
	// accounts, and get_project_config.php say so.
	AccountCreationDisabled bool
	// TermsOfUse, when set, is get_project_config.php's <terms_of_use>.
	TermsOfUse string
	// AcceptUnknownUploads makes the upload handler accept files it never
	// handed out (for replaying captured uploads); max_nbytes and md5 then
	// come from the request header. By default only output files of jobs
	// this server sent are accepted, with their signed max_nbytes.
	AcceptUnknownUploads bool
	// Unsigned sends no <code_sign_key>, <file_signature> or
	// <xml_signature>. The real client then refuses the app files unless
	// its cc_config sets unsigned_apps_ok.
	Unsigned bool
	// SigningKey is the project's code-signing key; nil generates a fresh
	// 1024-bit key in New. Pass the same key to a restarted server so that
	// clients attached to the earlier one still accept its apps. BOINC's
	// key format limits it to 1024 bits.
	SigningKey *rsa.PrivateKey
	// Notices are sent as <message priority="notice"> in every processed
	// scheduler reply (SetNotices replaces them).
	Notices []string
	// News, when set, is the project's news feed: every processed reply
	// names it in <rss_feeds> and GET /notices.php serves it (SetNews
	// replaces it).
	News *NewsFeed
}

// App is one application with one version.
type App struct {
	Name         string
	FriendlyName string // default Name
	VersionNum   int    // default 100
	// Platform of the version; "" answers each request with its own
	// <platform_name>, so a shell-script app runs on any host. An app
	// listed again with another Platform (and other file names) is the
	// same app's version for that platform: each job gets the version of
	// the first of the client's platforms (<platform_name>, then each
	// <alt_platform>) that has one.
	Platform string
	// APIVersion is sent as <api_version>: set it for apps linked with the
	// BOINC API (the client then drives them through shared memory); leave
	// it empty for plain programs.
	APIVersion string
	Files      []AppFile // at least one; exactly one MainProgram (default: the first)
	AvgNCPUs   float64   // default 1
	Flops      float64   // default 1e9
	// NGPUs > 0 makes the version an NVIDIA GPU version using that many
	// GPUs per task: the reply's <app_version> carries
	// <coproc><type>NVIDIA</type><count>NGPUs</count></coproc>, as a real
	// scheduler writes a GPU version's host usage, and its jobs answer
	// the request's NVIDIA work request only. The app never needs to
	// touch a GPU: the client only schedules by it.
	NGPUs float64
	// PlanClass is sent as the version's and its results' <plan_class>
	// (e.g. "cuda"); "" sends none.
	PlanClass string
}

// AppFile is one file of an app version.
type AppFile struct {
	Name string
	Data []byte
	// Path, when set, serves the file from disk instead of Data. It is
	// read once by New to compute its size, checksum and signature.
	Path        string
	Executable  bool
	MainProgram bool
}

// JobTemplate describes every job the server creates.
type JobTemplate struct {
	// CommandLine may contain {n} (job number, from 1) and {seed} (the
	// job's PRNG seed, JobSeed(n)). Default "--seconds 1".
	CommandLine string
	// FpopsEst is the estimated cost; default 1e9 (1 s at 1e9 flops).
	FpopsEst float64
	// FpopsBound is the limit past which the client aborts the job;
	// default max(1000·FpopsEst, 1e13).
	FpopsBound float64
	// Deadline is the report deadline from send time; default 7 days.
	Deadline time.Duration
	// InputSize is the size of the job's input file, filled by
	// JobInput(n, InputSize); 0 means the job has no input file.
	InputSize int
	// GzipInput offers the input file gzip-compressed too, as a project
	// that staged it with stage_file --gzip: the file_info carries
	// <gzipped_url> (GET /download/NAME.gz serves the .gz) and
	// <gzipped_nbytes> beside <url>, while <nbytes> and <md5_cksum> stay
	// the uncompressed file's. Stats.Downloads counts NAME.gz apart from
	// NAME, so a test sees which one was fetched. GzipOnly leaves out
	// <url>: only the .gz is offered.
	GzipInput         bool
	GzipOnly          bool
	InputOpenName     string  // default "in"
	OutputOpenName    string  // default "out"
	CopyOutput        bool    // <copy_file/> on the output file_ref, as the reference server
	MaxOutputBytes    float64 // default 65536
	ReportImmediately bool
}

// Faults are misbehaviours injected into upcoming requests. Counters are
// consumed one per affected request. Scheduler RPCs that get a fault are
// counted in Stats.RPCs and LastRequest but are otherwise not processed
// (no host, job, report or ack is recorded), as if the server had died
// before committing: the client is expected to send the same reports again.
type Faults struct {
	MalformedReplies int // next N RPCs get a truncated reply (HTTP 200)
	HTTPErrors       int // next N RPCs get HTTP 500
	// HangReplies: next N RPCs get half a reply, then nothing until the
	// client gives up (or the server closes). With HangReportsOnly, only
	// RPCs that report a result count.
	HangReplies      int
	HangReportsOnly  bool
	CorruptDownloads int // next N input-file downloads (plain or .gz) serve wrong bytes of the right length
	// CutDownloads: the next N input-file downloads (plain or .gz) send
	// the response header with the full Content-Length, half the body,
	// and then break the connection, as a dropped link does; the client
	// keeps what arrived and resumes with Range.
	CutDownloads int
	// GzipBombDownloads: the next N downloads of a .gz input
	// (JobTemplate.GzipInput) serve, instead of the real .gz, a valid
	// gzip stream of about 16 KiB that inflates to 16 MiB of zeros.
	GzipBombDownloads int
	UploadFailures    int  // next N uploads get <status>1</status> (transient)
	UploadPermanent   bool // every upload gets <status>-1</status>
	// HostileFileName, if set, names the input file of the next job sent
	// (e.g. "../evil"); it is cleared once used.
	HostileFileName string
	// OversizedReply makes the next RPC's reply larger than 20 MiB (a
	// no-work reply padded with an unknown element).
	OversizedReply bool
	// DownloadBytesPerSec, when positive, serves input-file bodies at
	// about this rate (in small flushed chunks), so a test can act while
	// a download is in progress. Not a counter: it applies to every input
	// download that starts while it is set.
	DownloadBytesPerSec int
	// UploadDelay, when positive, holds every upload request that much
	// before the handler answers it (the client's context ending
	// releases it), so a test can act while an upload is in progress.
	// Not a counter, as DownloadBytesPerSec.
	UploadDelay time.Duration
	// RewriteReply, when set, sees every scheduler reply about to be sent
	// for a processed RPC (the jobs in it count as sent) and returns the
	// body to send instead; rpc is the RPC's number (Stats.RPCs at the
	// time). It is how tests play a hostile project: path traversal in
	// names, XML bombs, absurd numbers, a million results. Not a counter:
	// it stays until SetFaults replaces it, so the function keeps its own
	// state to pick which replies to change. It runs on the handler's
	// goroutine without the server's lock.
	RewriteReply func(rpc int, reply []byte) []byte
	// RewriteMaster, when set, likewise rewrites the master page.
	RewriteMaster func(page []byte) []byte
}

const (
	defaultName          = "boincd test project"
	defaultVersionNum    = 100
	defaultFlops         = 1e9
	defaultMaxJobs       = 4
	defaultRequestDelay  = 5 * time.Second
	defaultCommandLine   = "--seconds 1"
	defaultFpopsEst      = 1e9
	defaultDeadline      = 7 * 24 * time.Hour
	defaultInputOpen     = "in"
	defaultOutputOpen    = "out"
	defaultMaxOutput     = 65536
	oversizedReplyBytes  = 21 << 20
	maxSchedRequestBytes = 32 << 20
)

// withDefaults returns a copy of cfg with defaults filled in, or an error
// naming the first invalid field.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Name == "" {
		cfg.Name = defaultName
	}
	if len(cfg.Apps) == 0 {
		return cfg, fmt.Errorf("testproject config: no apps")
	}
	apps := make([]App, len(cfg.Apps))
	seen := map[string]bool{}
	for i, a := range cfg.Apps {
		if a.Name == "" {
			return cfg, fmt.Errorf("testproject config: app %d has no name", i)
		}
		if err := boinc.ValidateFileName(a.Name, false); err != nil {
			return cfg, fmt.Errorf("testproject config: app %d name: %w", i, err)
		}
		// An app may be listed once per platform: its versions for
		// several platforms (Server.versionForLocked picks one).
		if seen["app:"+a.Name+"\x00"+a.Platform] || (a.Platform == "" && seen["app:"+a.Name]) {
			return cfg, fmt.Errorf("testproject config: app %q listed twice for platform %q", a.Name, a.Platform)
		}
		seen["app:"+a.Name+"\x00"+a.Platform], seen["app:"+a.Name] = true, true
		if a.FriendlyName == "" {
			a.FriendlyName = a.Name
		}
		if a.VersionNum <= 0 {
			a.VersionNum = defaultVersionNum
		}
		if a.AvgNCPUs <= 0 {
			a.AvgNCPUs = 1
		}
		if a.Flops <= 0 {
			a.Flops = defaultFlops
		}
		if a.NGPUs < 0 {
			return cfg, fmt.Errorf("testproject config: app %q NGPUs %g < 0", a.Name, a.NGPUs)
		}
		if a.PlanClass != "" {
			if err := boinc.ValidateFileName(a.PlanClass, false); err != nil {
				return cfg, fmt.Errorf("testproject config: app %q plan class: %w", a.Name, err)
			}
		}
		if len(a.Files) == 0 {
			return cfg, fmt.Errorf("testproject config: app %q has no files", a.Name)
		}
		files := append([]AppFile(nil), a.Files...)
		mains := 0
		for j, f := range files {
			if err := boinc.ValidateFileName(f.Name, false); err != nil {
				return cfg, fmt.Errorf("testproject config: app %q file %d: %w", a.Name, j, err)
			}
			if seen["file:"+f.Name] {
				return cfg, fmt.Errorf("testproject config: app file %q listed twice", f.Name)
			}
			seen["file:"+f.Name] = true
			if f.MainProgram {
				mains++
			}
		}
		switch mains {
		case 0:
			files[0].MainProgram = true
			files[0].Executable = true
		case 1:
		default:
			return cfg, fmt.Errorf("testproject config: app %q has %d main programs", a.Name, mains)
		}
		a.Files = files
		apps[i] = a
	}
	cfg.Apps = apps
	if cfg.TotalJobs < 0 {
		return cfg, fmt.Errorf("testproject config: TotalJobs %d < 0", cfg.TotalJobs)
	}
	if cfg.MaxJobsPerRPC <= 0 {
		cfg.MaxJobsPerRPC = defaultMaxJobs
	}
	switch {
	case cfg.RequestDelay == 0:
		cfg.RequestDelay = defaultRequestDelay
	case cfg.RequestDelay < 0:
		cfg.RequestDelay = 0
	}
	j := &cfg.Job
	if j.CommandLine == "" {
		j.CommandLine = defaultCommandLine
	}
	if j.FpopsEst <= 0 {
		j.FpopsEst = defaultFpopsEst
	}
	if j.FpopsBound <= 0 {
		j.FpopsBound = max(1000*j.FpopsEst, 1e13)
	}
	if j.FpopsBound < j.FpopsEst {
		return cfg, fmt.Errorf("testproject config: FpopsBound %g < FpopsEst %g", j.FpopsBound, j.FpopsEst)
	}
	if j.Deadline <= 0 {
		j.Deadline = defaultDeadline
	}
	if j.InputSize < 0 {
		return cfg, fmt.Errorf("testproject config: InputSize %d < 0", j.InputSize)
	}
	if j.GzipOnly && !j.GzipInput {
		return cfg, fmt.Errorf("testproject config: GzipOnly without GzipInput")
	}
	if j.InputOpenName == "" {
		j.InputOpenName = defaultInputOpen
	}
	if j.OutputOpenName == "" {
		j.OutputOpenName = defaultOutputOpen
	}
	for _, n := range []string{j.InputOpenName, j.OutputOpenName} {
		if err := boinc.ValidateFileName(n, true); err != nil {
			return cfg, fmt.Errorf("testproject config: job open name: %w", err)
		}
	}
	if j.MaxOutputBytes <= 0 {
		j.MaxOutputBytes = defaultMaxOutput
	}
	return cfg, nil
}

// RefAppScript is a science app in the style of the reference capture's
// refapp: it does not use the BOINC API. Options (any order):
//
//	--seconds S   sleep S whole seconds first (default 1)
//	--exit N      exit with status N (non-zero: no output, no finish file)
//
// It reads the input through the slot's "in" link file (or "in" itself),
// writes "out" (see RefAppOutput), writes boinc_finish_called and exits 0.
const RefAppScript = `#!/bin/sh
# boincd test app (does NOT use the BOINC API); cwd = slot directory.
secs=1
code=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) secs="$2"; shift ;;
    --exit) code="$2"; shift ;;
  esac
  shift
done
echo "refapp: start secs=$secs" >&2
inpath=$(sed -n 's:.*<soft_link>\(.*\)</soft_link>.*:\1:p' in 2>/dev/null)
[ -n "$inpath" ] || inpath=in
[ -f "$inpath" ] || inpath=/dev/null
i=0
while [ "$i" -lt "$secs" ]; do
  sleep 1
  i=$((i+1))
done
if [ "$code" != 0 ]; then
  echo "refapp: failing with exit $code" >&2
  exit "$code"
fi
{
  echo "refapp output"
  echo "input bytes: $(wc -c < "$inpath" | tr -d ' ')"
  echo "input md5: $(md5sum < "$inpath" | cut -d' ' -f1)"
  echo "slept: $secs"
} > out
echo "refapp: done" >&2
echo 0 > boinc_finish_called
exit 0
`

// RefAppOutput is the "out" file RefAppScript writes for the given input
// and --seconds value, so tests can check uploaded outputs byte for byte.
func RefAppOutput(input []byte, seconds int) []byte {
	sum := md5.Sum(input)
	return []byte("refapp output\n" +
		"input bytes: " + strconv.Itoa(len(input)) + "\n" +
		"input md5: " + hex.EncodeToString(sum[:]) + "\n" +
		"slept: " + strconv.Itoa(seconds) + "\n")
}

// ShellApp makes a one-file app whose main program is the given shell
// script, named like the reference app: NAME_1.00_x86_64-pc-linux-gnu.sh.
func ShellApp(name, script string) App {
	return App{
		Name:         name,
		FriendlyName: name,
		VersionNum:   defaultVersionNum,
		Files: []AppFile{{
			Name:        name + "_1.00_" + platform.This() + ".sh",
			Data:        []byte(script),
			Executable:  true,
			MainProgram: true,
		}},
		AvgNCPUs: 1,
		Flops:    defaultFlops,
	}
}

// DefaultApp is ShellApp("refapp", RefAppScript).
func DefaultApp() App {
	a := ShellApp("refapp", RefAppScript)
	a.FriendlyName = "Reference sleeper app"
	return a
}

func expandCommandLine(tmpl string, n int, seed uint64) string {
	r := strings.NewReplacer("{n}", strconv.Itoa(n), "{seed}", strconv.FormatUint(seed, 10))
	return r.Replace(tmpl)
}
