package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/rpcclient"
)

// The Add Project wizard, the daemon's side: the project web RPCs
// (get_project_config.php, lookup_account.php, create_account.php) that
// GUI RPC asks for, fetched off the owner goroutine through the daemon's
// HTTP client, and the status project_attach_poll reports for the last
// project attached over GUI RPC.

const (
	// webRPCTimeout bounds one web RPC, retries included, whatever the
	// HTTP client's own limits allow.
	webRPCTimeout = 2 * time.Minute
	// webRPCMaxReply caps a web RPC's reply; a project_config with long
	// terms of use is a few tens of KiB.
	webRPCMaxReply = 1 << 20
	// attachPollLimit is how long project_attach_poll says "in progress"
	// while the new project's first contact waits (another project's
	// exchange, a backoff): past it the attach is reported done, the
	// contact still to come, so that a wizard polling does not spin for
	// ever.
	attachPollLimit = 2 * time.Minute
	// maxAttachMessages bounds the messages project_attach_poll passes on.
	maxAttachMessages = 20
)

// accountState is the wizard's state; the owner goroutine's alone.
type accountState struct {
	web    map[string]*webRPC // kind → the last request of that kind
	seq    uint64
	attach attachStatus
}

// webRPC is one project web RPC, in flight or done.
type webRPC struct {
	id     uint64
	cancel context.CancelFunc
	done   bool
	reply  []byte
	errNum int
}

// attachStatus follows the last project attached over GUI RPC to the end
// of its first contact: the master page, then the first scheduler RPC.
type attachStatus struct {
	url      string // "" before any attach
	started  time.Time
	done     bool
	errNum   int
	messages []string
}

// startWebRPC starts a.Kind's request, replacing (cancelling) the one in
// flight, and returns at once; the reply is collected by webRPCDone.
func (d *Daemon) startWebRPC(a guirpc.WebRPC) error {
	switch a.Kind {
	case guirpc.WebRPCProjectConfig, guirpc.WebRPCLookupAccount, guirpc.WebRPCCreateAccount:
	default:
		return fmt.Errorf("unknown project web RPC %q", a.Kind)
	}
	if d.acct.web == nil {
		d.acct.web = map[string]*webRPC{}
	}
	if old := d.acct.web[a.Kind]; old != nil && !old.done {
		old.cancel()
	}
	d.acct.seq++
	id, kind := d.acct.seq, a.Kind
	ctx, cancel := context.WithTimeout(d.ctx, webRPCTimeout)
	d.acct.web[kind] = &webRPC{id: id, cancel: cancel}
	full := a.Endpoint
	if a.Query != "" {
		full += "?" + a.Query
	}
	// The query may hold a password hash: only the endpoint is logged,
	// and the full URL is taken out of error texts.
	log := d.log.With(slog.String("op", kind), slog.String("url", a.Endpoint))
	log.Info("project web RPC: sending request")
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer cancel()
		body, err := d.http.Get(ctx, full, webRPCMaxReply)
		if err != nil && ctx.Err() != nil && errors.Is(context.Cause(ctx), context.Canceled) {
			// Replaced by a newer request, or the daemon is stopping.
			return
		}
		_ = d.query(d.ctx, func() { d.webRPCDone(kind, id, body, err, a, full, log) })
	}()
	return nil
}

func (d *Daemon) webRPCDone(kind string, id uint64, body []byte, err error, a guirpc.WebRPC, full string, log *slog.Logger) {
	op := d.acct.web[kind]
	if op == nil || op.id != id {
		return // replaced meanwhile
	}
	op.done = true
	if err != nil {
		op.errNum = webErrNum(err)
		msg := err.Error()
		if a.Query != "" {
			msg = strings.ReplaceAll(msg, full, a.Endpoint+"?…")
			msg = strings.ReplaceAll(msg, a.Query, "…")
		}
		log.Warn("project web RPC failed", slog.Int("error_num", op.errNum), slog.String("err", msg))
		return
	}
	op.reply = body
	log.Info("project web RPC done", slog.Int("bytes", len(body)))
}

// webRPCStatus is where the last request of kind stands.
func (d *Daemon) webRPCStatus(kind string) guirpc.WebRPCStatus {
	op := d.acct.web[kind]
	if op == nil {
		return guirpc.WebRPCStatus{}
	}
	return guirpc.WebRPCStatus{Started: true, Done: op.done, Reply: op.reply, ErrorNum: op.errNum}
}

// webErrNum is the BOINC error number the C++ client gives a failed
// request (client/http_curl.cpp): a name that does not resolve, a refused
// connection, HTTP 4xx (permanent) or 5xx (transient), a timeout.
func webErrNum(err error) int {
	var he *rpcclient.HTTPError
	var dns *net.DNSError
	var tl *rpcclient.ReplyTooLargeError
	var se *rpcclient.StallError
	var te *rpcclient.ReplyTimeoutError
	var ne net.Error
	switch {
	case errors.As(err, &he):
		if he.Permanent() {
			return guirpc.ErrNumHTTPPermanent
		}
		return guirpc.ErrNumHTTPTransient
	case errors.As(err, &dns):
		return guirpc.ErrNumGetHostByName
	case errors.As(err, &tl):
		return guirpc.ErrNumFileTooBig
	case errors.As(err, &se), errors.As(err, &te), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return guirpc.ErrNumTimeout
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return guirpc.ErrNumConnect
	case strings.Contains(err.Error(), "is not http or https"), strings.Contains(err.Error(), "no host"):
		return guirpc.ErrNumInvalidURL
	}
	return guirpc.ErrNumHTTPTransient
}

// attachFromGUI is project_attach: the attach itself, then the status
// project_attach_poll follows until the first contact is over.
func (d *Daemon) attachFromGUI(url, key string, now time.Time) error {
	if err := d.attachViaRPC(url, key, now); err != nil {
		return err
	}
	canon, _ := boinc.CanonicalMasterURL(url)
	d.acct.attach = attachStatus{url: canon, started: now}
	return nil
}

// attachPollStatus is project_attach_poll: ERR_IN_PROGRESS while the
// first contact is under way, then 0 or its failure, with what the project
// said. A first contact that cannot happen soon (network suspended, the
// project detached, attachPollLimit passed) is reported as done: the
// project is attached and will be contacted.
func (d *Daemon) attachPollStatus(now time.Time) guirpc.AttachStatus {
	a := &d.acct.attach
	switch {
	case a.url == "":
		return guirpc.AttachStatus{}
	case a.done:
		return guirpc.AttachStatus{ErrorNum: a.errNum, Messages: append([]string(nil), a.messages...)}
	case d.st.projects[a.url] == nil:
		return guirpc.AttachStatus{}
	case d.networkSuspended(now):
		return guirpc.AttachStatus{Messages: []string{"Network activity is suspended: the project will be contacted when it is allowed."}}
	case now.Sub(a.started) > attachPollLimit:
		return guirpc.AttachStatus{Messages: []string{"The project has not been contacted yet; the client keeps trying."}}
	}
	return guirpc.AttachStatus{ErrorNum: guirpc.ErrNumInProgress}
}

func (a *attachStatus) finish(errNum int, messages []string) {
	a.done, a.errNum = true, errNum
	if len(messages) > maxAttachMessages {
		messages = messages[:maxAttachMessages]
	}
	a.messages = messages
}

// attachMasterDone follows the attach through the master page fetch
// (called first thing by handleMasterDone): a failure ends it.
func (d *Daemon) attachMasterDone(ev masterDone) {
	a := &d.acct.attach
	if a.url != ev.project || a.done || d.ctx.Err() != nil {
		return
	}
	if ev.err != nil {
		if masterDownloadFailed(ev.err) {
			a.finish(guirpc.ErrNumAttachFailDownload, []string{"Couldn't download the project's master page: " + ev.err.Error()})
		} else {
			a.finish(guirpc.ErrNumAttachFailParse, []string{"Couldn't find the project's scheduler in its master page: " + ev.err.Error()})
		}
		return
	}
	for _, u := range ev.urls {
		if rpcclient.CheckSchedulerURL(u) == nil {
			return // on to the first scheduler RPC
		}
	}
	a.finish(guirpc.ErrNumAttachFailParse, []string{"The project's master page names no usable scheduler URL."})
}

// masterDownloadFailed tells a master page that could not be fetched from
// one that came but named no scheduler (rpcclient.FetchMaster).
func masterDownloadFailed(err error) bool {
	return !strings.Contains(err.Error(), "no scheduler URL")
}

// attachRPCDone ends the attach with its first scheduler RPC (called
// first thing by handleRPCDone): 0 when the project took this computer
// (a host id), else why not, with the project's messages.
func (d *Daemon) attachRPCDone(ev rpcDone) {
	a := &d.acct.attach
	if a.url != ev.project || a.done || d.ctx.Err() != nil {
		return
	}
	if ev.err != nil {
		a.finish(webErrNum(ev.err), []string{"Couldn't contact the project's scheduler: " + ev.err.Error()})
		return
	}
	rep := ev.reply
	var msgs []string
	keyRefused := false
	for _, m := range rep.Messages {
		t := strings.TrimSpace(m.Text)
		if t == "" {
			continue
		}
		msgs = append(msgs, t)
		if l := strings.ToLower(t); strings.Contains(l, "account key") || strings.Contains(l, "authenticator") {
			keyRefused = true
		}
	}
	num := 0
	p := d.st.projects[ev.project]
	switch {
	case rep.ProjectIsDown:
		num = guirpc.ErrNumProjectDown
	case rep.HostID == 0 && (p == nil || p.HostID == 0):
		// A scheduler gives every request it accepts a host id; a first
		// contact without one was refused.
		num = guirpc.ErrNumAttachFailServer
		if keyRefused {
			num = guirpc.ErrNumAttachFailBadKey
		}
	}
	a.finish(num, msgs)
}
