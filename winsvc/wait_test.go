package winsvc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestWaitState(t *testing.T) {
	failed := Status{State: Stopped, Win32ExitCode: ErrorServiceSpecific, ServiceSpecificExitCode: ExitStartFailed}
	tests := []struct {
		name    string
		seq     []Status
		qerr    error
		want    State
		wantErr string
	}{
		{"reaches running", []Status{{State: StartPending}, {State: StartPending}, {State: Running}}, nil, Running, ""},
		{"already stopped", []Status{{State: Stopped}}, nil, Stopped, ""},
		{"stops while starting", []Status{{State: StartPending}, failed}, nil, Running, "boincd could not start"},
		{"win32 failure", []Status{{State: Stopped, Win32ExitCode: 5}}, nil, Running, "Win32 exit code 5"},
		{"query fails", nil, errors.New("access denied"), Running, "query status: access denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := 0
			query := func() (Status, error) {
				if tt.qerr != nil {
					return Status{}, tt.qerr
				}
				st := tt.seq[min(i, len(tt.seq)-1)]
				i++
				return st, nil
			}
			st, err := WaitState(context.Background(), query, tt.want, time.Millisecond)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || st.State != tt.want {
				t.Fatalf("WaitState = %+v, %v", st, err)
			}
		})
	}
}

func TestWaitStateContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	query := func() (Status, error) {
		n++
		if n == 3 {
			cancel()
		}
		return Status{State: StopPending}, nil
	}
	_, err := WaitState(ctx, query, Stopped, time.Millisecond)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "still stop pending") {
		t.Fatalf("err = %v", err)
	}
}
