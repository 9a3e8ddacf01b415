package daemon

import (
	"context"
	"errors"
	"net"

	"github.com/boincd/boincd/metrics"
	"github.com/boincd/boincd/rpcclient"
	"github.com/boincd/boincd/workfetch"
)

// RPC outcomes counted per project (metrics label "outcome"): "refused"
// is a reply saying the project is down.
const (
	RPCOK           = metrics.RPCOK
	RPCProjectDown  = metrics.RPCRefused
	RPCHTTPError    = metrics.RPCHTTPError
	RPCNetworkError = metrics.RPCNetworkError
	RPCReplyError   = metrics.RPCParseError
)

// projectCounters are cumulative totals since the daemon started, kept by
// the owner goroutine and read through snapshots (metrics): nothing else
// increments them, so they need no lock.
type projectCounters struct {
	rpcs                     map[string]int
	bytesUp                  int64
	bytesDown                int64
	upFailures, downFailures uint64
	processing               [workfetch.NumRsc]float64 // instance-seconds
}

func (d *Daemon) counters(url string) *projectCounters {
	if d.pcount == nil {
		d.pcount = map[string]*projectCounters{}
	}
	c := d.pcount[url]
	if c == nil {
		c = &projectCounters{rpcs: map[string]int{}}
		d.pcount[url] = c
	}
	return c
}

// rpcOutcome classifies a failed scheduler RPC.
func rpcOutcome(err error) string {
	var herr *rpcclient.HTTPError
	var nerr net.Error
	var serr *rpcclient.StallError
	switch {
	case errors.As(err, &herr):
		return RPCHTTPError
	case errors.As(err, &serr), errors.As(err, &nerr), errors.Is(err, context.DeadlineExceeded):
		return RPCNetworkError
	}
	return RPCReplyError
}
