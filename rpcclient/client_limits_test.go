package rpcclient

import (
	"testing"
	"time"
)

func TestSetTransferLimits(t *testing.T) {
	c := New(Options{StallTimeout: time.Minute})
	if s, b := c.TransferLimits(); s != time.Minute || b != defaultMinBytesPerSec {
		t.Fatalf("start: %v %d", s, b)
	}
	before := c.lim.Load()
	c.SetTransferLimits(20*time.Second, 100)
	if s, b := c.TransferLimits(); s != 20*time.Second || b != 100 {
		t.Fatalf("after set: %v %d", s, b)
	}
	if before.stallTimeout != time.Minute {
		t.Fatal("a request in flight saw its limits change")
	}
	if got := c.rpcLimit().max; got != 40*time.Second {
		t.Fatalf("reply bound %v, want twice the stall timeout", got)
	}
	c.SetTransferLimits(0, -1)
	if s, b := c.TransferLimits(); s != defaultStallTimeout || b != 0 {
		t.Fatalf("defaults: %v %d", s, b)
	}
}
