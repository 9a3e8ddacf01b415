package daemon

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// A project's code-signing key is learned at attach and replaced only by
// a key signed with it; a bare new key (a hostile server, a hijacked URL)
// is refused, the old key kept, and a project reset is what makes the
// client trust a new key.
func TestCodeSignKeyRollover(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		signed  bool
		changed bool
		logMsg  string
	}{
		{"signed by the old key", true, true, "code-signing key changed: the new key is signed by the old one"},
		{"bare key swap", false, false, "project sent a different code-signing key without a signature by the key we hold: keeping the old key (reset the project to accept a new one)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testsupport.StartProject(t, testproject.Config{
				Job:       testproject.JobTemplate{CommandLine: "--seconds 1", InputSize: 100},
				TotalJobs: 1,
			})
			h := startDaemonIn(t, filepath.Join(t.TempDir(), "data"), projectsConfig(srv), nil)
			url := srv.URL()
			key := func() string {
				var k string
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = h.d.query(ctx, func() {
					if p := h.d.st.projects[url]; p != nil {
						k = p.CodeSignKey
					}
				})
				return k
			}
			testsupport.WaitFor(t, 30*time.Second, "the key learned at attach", func() bool { return key() != "" })
			first := key()
			if err := srv.RotateKey(nil, tc.signed); err != nil {
				t.Fatal(err)
			}
			update := func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := (rpcBackend{h.d}).Do(ctx, guirpc.ProjectOp{URL: url, Op: guirpc.ProjectUpdate}); err != nil {
					t.Fatal(err)
				}
			}
			update()
			testsupport.WaitFor(t, 30*time.Second, "the daemon's verdict on the new key", func() bool { return len(h.logs.Find(tc.logMsg)) > 0 })
			if got := key() != first; got != tc.changed {
				t.Fatalf("key changed = %v, want %v", got, tc.changed)
			}
			if tc.changed {
				return
			}
			// The volunteer's reset trusts the project afresh.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := (rpcBackend{h.d}).Do(ctx, guirpc.ProjectOp{URL: url, Op: guirpc.ProjectReset}); err != nil {
				t.Fatal(err)
			}
			testsupport.WaitFor(t, 30*time.Second, "the new key after a reset", func() bool { k := key(); return k != "" && k != first })
		})
	}
}
