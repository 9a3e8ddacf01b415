package demoapp

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/boincd/boincd/boincapi"
)

// awaitTrickleDown polls for a trickle-down as a BOINC app does
// (boinc_receive_trickle_down), copies it to stderr and deletes it. None
// within wait is an error: the test that asked for one failed.
func awaitTrickleDown(ctx context.Context, app *boincapi.App, dir string, wait time.Duration, stderr io.Writer) (int, error) {
	deadline := time.Now().Add(wait)
	for {
		if name, ok := app.ReceiveTrickleDown(); ok {
			path := filepath.Join(dir, name)
			body, err := os.ReadFile(path)
			if err != nil {
				return 1, fmt.Errorf("trickle-down %s: %w", name, err)
			}
			fmt.Fprintf(stderr, "demoapp: trickle-down %s: %s\n", name, body)
			if err := os.Remove(path); err != nil {
				return 1, fmt.Errorf("trickle-down %s: %w", name, err)
			}
			return 0, nil
		}
		if time.Now().After(deadline) {
			return 1, fmt.Errorf("no trickle-down message within %v", wait)
		}
		if err := app.Wait(ctx); err != nil {
			return 1, err
		}
		select {
		case <-ctx.Done():
			return 1, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
