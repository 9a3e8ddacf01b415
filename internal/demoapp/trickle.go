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

// uploadEarly asks for the output's upload while the app still runs
// (boinc_upload_file) and waits for its status (boinc_upload_status).
func uploadEarly(ctx context.Context, app *boincapi.App, wait time.Duration, stderr io.Writer) (int, error) {
	if err := app.UploadFile(OutputName); err != nil {
		return 1, err
	}
	deadline := time.Now().Add(wait)
	for {
		if status, ok := app.UploadStatus(OutputName); ok {
			fmt.Fprintf(stderr, "demoapp: early upload of %s: status %d\n", OutputName, status)
			if status != 0 {
				return 1, fmt.Errorf("early upload of %s failed: status %d", OutputName, status)
			}
			return 0, nil
		}
		if time.Now().After(deadline) {
			return 1, fmt.Errorf("early upload of %s not over within %v", OutputName, wait)
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
