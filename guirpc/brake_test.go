package guirpc

import (
	"testing"
	"time"
)

// TestBrakeSharesGuardRule: Brake (the web login's) spaces a peer's
// checks exactly as the server's guard: free for brakeFree failures, then
// brakeDelay, refused unchecked beyond brakeMax, cleared by a success;
// peers are counted apart.
func TestBrakeSharesGuardRule(t *testing.T) {
	var b Brake
	now := time.Unix(1e9, 0)
	for i := range 10 {
		wait, ok := b.Reserve("a", now)
		if !ok {
			t.Fatalf("check %d refused", i)
		}
		if i < brakeFree && wait != 0 {
			t.Fatalf("check %d waits %v, want none", i, wait)
		}
		now = now.Add(wait)
		b.Checked("a", false, now)
	}
	wait, ok := b.Reserve("a", now)
	if !ok || wait != brakeMax {
		t.Fatalf("after 10 failures: wait %v ok %v, want %v", wait, ok, brakeMax)
	}
	if _, ok := b.Reserve("a", now); ok {
		t.Fatal("a second check booked beyond brakeMax was not refused")
	}
	if w, ok := b.Reserve("b", now); !ok || w != 0 {
		t.Fatalf("another peer waits %v (ok %v)", w, ok)
	}
	b.Checked("a", true, now.Add(wait))
	if w, ok := b.Reserve("a", now.Add(wait)); !ok || w != 0 {
		t.Fatalf("after a success: wait %v ok %v, want none", w, ok)
	}
}
