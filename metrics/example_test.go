package metrics_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/boincd/boincd/metrics"
)

// ownerLoop stands for the daemon: one goroutine owns the state and answers
// snapshot requests between its other work.
type ownerLoop struct {
	requests chan chan *metrics.Snapshot
	running  int
}

func (d *ownerLoop) run(ctx context.Context) {
	for {
		select {
		case reply := <-d.requests:
			reply <- &metrics.Snapshot{
				Tasks: []metrics.TaskCount{{State: metrics.TaskRunning, Resource: metrics.ResourceCPU, Count: d.running}},
			}
		case <-ctx.Done():
			return
		}
	}
}

// Snapshot asks the owner loop; it gives up when the scrape does.
func (d *ownerLoop) Snapshot(ctx context.Context) (*metrics.Snapshot, error) {
	reply := make(chan *metrics.Snapshot, 1)
	select {
	case d.requests <- reply:
	case <-ctx.Done():
		return nil, fmt.Errorf("asking the daemon for a snapshot: %w", ctx.Err())
	}
	select {
	case s := <-reply:
		return s, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the daemon's snapshot: %w", ctx.Err())
	}
}

// The daemon is the Source; the Server runs until the daemon's context ends.
func ExampleNewServer() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := &ownerLoop{requests: make(chan chan *metrics.Snapshot), running: 3}
	go d.run(ctx)

	srv, err := metrics.NewServer("127.0.0.1:0", d, slog.New(slog.DiscardHandler), metrics.AllowRemote(false))
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	<-srv.Ready()
	// ... scrape http://srv.Addr()/metrics ...
	cancel()
	fmt.Println("serve:", <-done)
	// Output: serve: <nil>
}
