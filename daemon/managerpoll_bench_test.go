package daemon

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	guiclient "github.com/boincd/boincd/guirpc/client"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// BenchmarkManagerPoll is one round of what BOINC Manager asks an idle
// client every second (get_cc_status, get_state, get_messages), on one
// connection, against a daemon attached to a live project that has no
// work for it (its only app needs a GPU). Issue 18 compares the daemon's
// memory and CPU with the C++ client's while a Manager polls: what one
// round allocates is what the collector must later reclaim, so allocs/op
// and B/op here (daemon and in-process client together) are the figures
// to keep down.
//
//	go test -run '^$' -bench ManagerPoll -benchmem ./daemon/
func BenchmarkManagerPoll(b *testing.B) {
	app := testproject.DefaultApp()
	app.NGPUs = 1
	srv := testsupport.StartProject(b, testproject.Config{Apps: []testproject.App{app}})
	dir := filepath.Join(b.TempDir(), "data")
	opt := Options{
		DataDir:           dir,
		Config:            projectsConfig(srv),
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
		GUIRPCAddr:        "127.0.0.1:0",
		BenchmarkDuration: -1,
		QuitGrace:         time.Second,
		Containers:        testOptions(dir, nil, nil).Containers,
	}
	d, err := New(opt)
	if err != nil {
		b.Fatal(err)
	}
	testsupport.Run(b, d.Run, 15*time.Second, &testsupport.LogBuffer{}, dir)
	ctx := context.Background()
	var addr string
	var attached bool
	testsupport.WaitFor(b, 30*time.Second, "the GUI RPC port and the project's first reply", func() bool {
		_ = d.query(ctx, func() {
			addr = d.guiAddr
			for _, p := range d.st.projects {
				attached = !p.LastRPCTime.IsZero()
			}
		})
		return addr != "" && attached
	})
	gui, err := guiclient.Dial(ctx, addr)
	if err != nil {
		b.Fatal(err)
	}
	defer gui.Close()
	reqs := []string{"<get_cc_status/>", "<get_state/>", "<get_messages>\n<seqno>0</seqno>\n</get_messages>"}
	var n int
	b.ReportAllocs()
	for b.Loop() {
		n = 0
		for _, req := range reqs {
			reply, err := gui.Call(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			n += len(reply)
		}
	}
	b.ReportMetric(float64(n), "reply-bytes/op")
}
