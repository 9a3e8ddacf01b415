package client

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
)

// recorder is a guirpc.Backend that records the actions it is asked to
// do and fails them with err.
type recorder struct {
	mu   sync.Mutex
	acts []guirpc.Action
	err  error
}

func (r *recorder) Snapshot(context.Context, guirpc.Parts) (*guirpc.State, error) {
	return &guirpc.State{}, nil
}

func (r *recorder) Do(_ context.Context, a guirpc.Action) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acts = append(r.acts, a)
	return r.err
}

func (r *recorder) last() guirpc.Action {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.acts) == 0 {
		return nil
	}
	return r.acts[len(r.acts)-1]
}

// startGUIRPC runs boincd's own GUI RPC server in process and returns an
// authorized client to it.
func startGUIRPC(t *testing.T, be guirpc.Backend) *Client {
	t.Helper()
	srv, err := guirpc.Listen(guirpc.Config{Addr: "127.0.0.1:0", Backend: be, Password: "pw",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	c, err := Dial(ctx, srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Authorize(ctx, "pw"); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestActionsReachTheServer: each write op arrives at the GUI RPC server
// as the action boinccmd's op would cause.
func TestActionsReachTheServer(t *testing.T) {
	const url = "http://project.example/"
	be := &recorder{}
	c := startGUIRPC(t, be)
	ctx := context.Background()
	tests := []struct {
		name string
		call func() error
		want guirpc.Action
	}{
		{"suspend task", func() error { return c.ResultOp(ctx, url, "wu_1_0", "suspend") }, guirpc.ResultOp{URL: url, Name: "wu_1_0", Op: guirpc.ResultSuspend}},
		{"resume task", func() error { return c.ResultOp(ctx, url, "wu_1_0", "resume") }, guirpc.ResultOp{URL: url, Name: "wu_1_0", Op: guirpc.ResultResume}},
		{"abort task with markup in its name", func() error { return c.ResultOp(ctx, url, "a<b>&c", "abort") }, guirpc.ResultOp{URL: url, Name: "a<b>&c", Op: guirpc.ResultAbort}},
		{"update project", func() error { return c.ProjectOp(ctx, url, "update") }, guirpc.ProjectOp{URL: url, Op: guirpc.ProjectUpdate}},
		{"suspend project", func() error { return c.ProjectOp(ctx, url, "suspend") }, guirpc.ProjectOp{URL: url, Op: guirpc.ProjectSuspend}},
		{"resume project", func() error { return c.ProjectOp(ctx, url, "resume") }, guirpc.ProjectOp{URL: url, Op: guirpc.ProjectResume}},
		{"no more work", func() error { return c.ProjectOp(ctx, url, "nomorework") }, guirpc.ProjectOp{URL: url, Op: guirpc.ProjectNoMoreWork}},
		{"allow more work", func() error { return c.ProjectOp(ctx, url, "allowmorework") }, guirpc.ProjectOp{URL: url, Op: guirpc.ProjectAllowMoreWork}},
		{"run never for an hour", func() error { return c.SetRunMode(ctx, boinc.RunModeNever, time.Hour) }, guirpc.SetMode{Which: "run", Mode: guirpc.ModeNever, Duration: 3600}},
		{"gpu always", func() error { return c.SetGPUMode(ctx, boinc.RunModeAlways, 0) }, guirpc.SetMode{Which: "gpu", Mode: guirpc.ModeAlways}},
		{"network auto", func() error { return c.SetNetworkMode(ctx, boinc.RunModeAuto, 0) }, guirpc.SetMode{Which: "network", Mode: guirpc.ModeAuto}},
		{"network restore", func() error { return c.SetNetworkMode(ctx, boinc.RunModeRestore, 0) }, guirpc.SetMode{Which: "network", Mode: guirpc.ModeRestore}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); err != nil {
				t.Fatal(err)
			}
			if got := be.last(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("the server did %#v, want %#v", got, tt.want)
			}
		})
	}

	be.err = guirpc.ErrNoSuchResult
	err := c.ResultOp(ctx, url, "gone", "suspend")
	var re *RPCError
	if !errors.As(err, &re) || re.Msg != "no such result" || re.Op != "suspend_result" {
		t.Errorf("a refused op gave %v, want the server's <error>no such result</error>", err)
	}
}

// TestActionRequestsAsCpp: the request bytes are those of the C++
// library's RPC_CLIENT::result_op, project_op and set_run_mode, and the
// reply is read as RPC::parse_reply reads it.
func TestActionRequestsAsCpp(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		call    func(c *Client) error
		request string
		reply   string
		wantErr string
	}{
		{"result_op", func(c *Client) error { return c.ResultOp(ctx, "http://p/", "r1", "suspend") },
			"<suspend_result>\n   <project_url>http://p/</project_url>\n   <name>r1</name>\n</suspend_result>", "<success/>", ""},
		{"project_op", func(c *Client) error { return c.ProjectOp(ctx, "http://p/", "nomorework") },
			"<project_nomorework>\n  <project_url>http://p/</project_url>\n</project_nomorework>", "<success/>", ""},
		{"set_run_mode", func(c *Client) error { return c.SetRunMode(ctx, boinc.RunModeNever, 90*time.Minute) },
			"<set_run_mode>\n<never/>\n  <duration>5400.000000</duration>\n</set_run_mode>", "<success/>", ""},
		{"set_gpu_mode", func(c *Client) error { return c.SetGPUMode(ctx, boinc.RunModeAuto, 0) },
			"<set_gpu_mode>\n<auto/>\n  <duration>0.000000</duration>\n</set_gpu_mode>", "<status>0</status>", ""},
		{"status error", func(c *Client) error { return c.SetNetworkMode(ctx, boinc.RunModeAlways, 0) },
			"<set_network_mode>\n<always/>\n  <duration>0.000000</duration>\n</set_network_mode>", "<status>-102</status>", "set_network_mode: status -102"},
		{"odd reply", func(c *Client) error { return c.ProjectOp(ctx, "http://p/", "update") },
			"<project_update>\n  <project_url>http://p/</project_url>\n</project_update>", "<results/>", "neither <success/> nor an error"},
		{"unauthorized", func(c *Client) error { return c.ProjectOp(ctx, "http://p/", "update") },
			"<project_update>\n  <project_url>http://p/</project_url>\n</project_update>", "<unauthorized/>", "unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startReplay(t, [][]byte{frame(tt.reply)})
			c := dialReplay(t, s)
			err := tt.call(c)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatal(err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			want := "<boinc_gui_rpc_request>\n" + tt.request + "\n</boinc_gui_rpc_request>\n\003"
			if got := s.received(); len(got) != 1 || got[0] != want {
				t.Errorf("sent %q\nwant %q", got, want)
			}
		})
	}
	// Ops the C++ library refuses are refused before anything is sent.
	s := startReplay(t, nil)
	c := dialReplay(t, s)
	for _, err := range []error{
		c.ResultOp(ctx, "http://p/", "r", "delete"),
		c.ProjectOp(ctx, "http://p/", "explode"),
		c.SetRunMode(ctx, boinc.RunMode(9), 0),
		c.SetRunMode(ctx, boinc.RunModeNever, -time.Second),
	} {
		if err == nil {
			t.Error("a bad op was not refused")
		}
	}
	if got := s.received(); len(got) != 0 {
		t.Errorf("bad ops sent %q", got)
	}
}
