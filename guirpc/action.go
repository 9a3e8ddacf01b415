package guirpc

import (
	"context"
	"errors"
)

// Backend is the client the server reports on and acts upon. The daemon
// implements it; every method may be called from several connection
// goroutines at once.
type Backend interface {
	// Snapshot returns a consistent read-only copy of the client state
	// for read ops: everything but the costly parts not in need, which
	// it may leave empty.
	Snapshot(ctx context.Context, need Parts) (*State, error)
	// Do carries out a state-changing op. The error's text goes into
	// <error>…</error>; return one of the Err* sentinels (possibly
	// wrapped) where BOINC has a fixed string for the failure.
	Do(ctx context.Context, a Action) error
}

// Parts names the sections of a State that grow with the queue or cost
// I/O. A manager polls several read ops a second; with 10,000 tasks,
// copying every task and walking every file for each of them kept the
// client busy (issue 18), so each op asks for what it writes.
type Parts uint8

const (
	// PartWorkunits is State.Workunits.
	PartWorkunits Parts = 1 << iota
	// PartResults is State.Results.
	PartResults
	// PartTransfers is State.Transfers.
	PartTransfers
	// PartDiskUsage is State.DiskUsage, measured for this reply, as
	// the C++ client does for get_disk_usage. Without it projects carry
	// the disk usage last measured.
	PartDiskUsage
	// PartPrefsOverride is State.PrefsOverride, read from the data
	// directory for this reply (the replies that show the override or
	// say whether there is one); without it the field is empty.
	PartPrefsOverride

	// PartAll is every part.
	PartAll = PartWorkunits | PartResults | PartTransfers | PartDiskUsage | PartPrefsOverride
)

// wireError is an error whose text is a fixed BOINC reply string, spelled
// (and capitalised) as the C++ client spells it.
type wireError string

func (e wireError) Error() string { return string(e) }

// Errors whose text BOINC GUIs recognise. Do may wrap them; the reply
// carries the sentinel's exact text.
var (
	ErrNoSuchProject        error = wireError("No such project")
	ErrNoSuchResult         error = wireError("no such result")
	ErrNoSuchFile           error = wireError("No such file")
	ErrNoSuchTransfer       error = wireError("No such transfer waiting")
	ErrMissingURL           error = wireError("Missing URL")
	ErrMissingAuthenticator error = wireError("Missing authenticator")
	ErrAlreadyAttached      error = wireError("Already attached to project")
	ErrMustDetachViaAM      error = wireError("must detach using account manager")
)

var sentinels = []error{
	ErrNoSuchProject, ErrNoSuchResult, ErrNoSuchFile, ErrNoSuchTransfer,
	ErrMissingURL, ErrMissingAuthenticator, ErrAlreadyAttached, ErrMustDetachViaAM,
}

// errorText is what goes inside <error> for err.
func errorText(err error) string {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return err.Error()
}

// Action is a state-changing request; it is one of the types below.
type Action interface{ action() }

// Project ops (ProjectOp.Op).
const (
	ProjectSuspend            = "suspend"
	ProjectResume             = "resume"
	ProjectUpdate             = "update"
	ProjectNoMoreWork         = "nomorework"
	ProjectAllowMoreWork      = "allowmorework"
	ProjectReset              = "reset"
	ProjectDetach             = "detach"
	ProjectDetachWhenDone     = "detach_when_done"
	ProjectDontDetachWhenDone = "dont_detach_when_done"
)

// ProjectOp acts on an attached project. URL is canonicalised.
type ProjectOp struct{ URL, Op string }

// Result ops (ResultOp.Op).
const (
	ResultSuspend = "suspend"
	ResultResume  = "resume"
	ResultAbort   = "abort"
)

// ResultOp acts on a task. URL is canonicalised.
type ResultOp struct{ URL, Name, Op string }

// SetMode sets the run mode of "run" (tasks), "gpu" or "network" to Mode
// (ModeAlways … ModeRestore) for Duration seconds (0 = permanently).
type SetMode struct {
	Which    string
	Mode     int
	Duration float64
}

// Attach attaches a project with an account key. URL is canonicalised;
// the backend returns ErrAlreadyAttached when it is attached already.
type Attach struct{ URL, Authenticator, Name string }

// Transfer ops (TransferOp.Op).
const (
	TransferRetry = "retry"
	TransferAbort = "abort"
)

// TransferOp retries or aborts a file transfer.
type TransferOp struct{ URL, File, Op string }

// SetPrefsOverride replaces global_prefs_override.xml with XML (a
// <global_preferences> element); "" deletes the file. It takes effect on
// ReadPrefsOverride.
type SetPrefsOverride struct{ XML string }

// ReadPrefsOverride re-reads the override file and applies the prefs.
type ReadPrefsOverride struct{}

// ReadCCConfig re-reads cc_config.xml (for boincd: its configuration).
type ReadCCConfig struct{}

// RunBenchmarks runs the CPU benchmarks.
type RunBenchmarks struct{}

// NetworkAvailable tells the client the network is up: retry deferred
// transfers and RPCs now.
type NetworkAvailable struct{}

// Quit asks the client to exit. The server has already sent its reply.
type Quit struct{}

// Kinds of WebRPC: the project web RPCs of the Add Project wizard
// (account.go).
const (
	WebRPCProjectConfig = "get_project_config"
	WebRPCLookupAccount = "lookup_account"
	WebRPCCreateAccount = "create_account"
)

// WebRPC starts a GET of one of a project's web RPCs on the user's
// behalf: Endpoint, plus "?" and Query when Query is not empty. Endpoint
// may be logged; Query may hold a password hash and must not be. The
// backend returns at once and fetches in the background, within bounds of
// time and size; a WebRPC replaces the one of the same Kind in flight.
type WebRPC struct{ Kind, Endpoint, Query string }

// WebRPCPoll reads into Out where the last WebRPC of Kind stands.
type WebRPCPoll struct {
	Kind string
	Out  *WebRPCStatus
}

// WebRPCStatus is where a WebRPC stands.
type WebRPCStatus struct {
	// Started: a WebRPC of this kind was made since the client started.
	Started bool
	// Done: it has finished, with the server's reply in Reply, or the
	// failure's BOINC error number in ErrorNum (lib/error_numbers.h).
	Done     bool
	Reply    []byte
	ErrorNum int
}

// AttachPoll reads into Out where the last project_attach stands.
type AttachPoll struct{ Out *AttachStatus }

// AttachStatus is project_attach_poll's answer: ErrorNum is
// ErrNumInProgress until the project's first contact has finished, then
// 0 or why it failed; Messages are the project's (or the client's) words
// about it.
type AttachStatus struct {
	ErrorNum int
	Messages []string
}

func (ProjectOp) action()         {}
func (ResultOp) action()          {}
func (SetMode) action()           {}
func (Attach) action()            {}
func (TransferOp) action()        {}
func (SetPrefsOverride) action()  {}
func (ReadPrefsOverride) action() {}
func (ReadCCConfig) action()      {}
func (RunBenchmarks) action()     {}
func (NetworkAvailable) action()  {}
func (Quit) action()              {}
func (WebRPC) action()            {}
func (WebRPCPoll) action()        {}
func (AttachPoll) action()        {}
