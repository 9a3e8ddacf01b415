//go:build linux

package taskrunner

import (
	"fmt"
	"testing"
)

// FuzzParseStat: a task names its own process (the comm field of
// /proc/PID/stat, in parentheses). Whatever it picks, the fields after it
// are read right.
func FuzzParseStat(f *testing.F) {
	for _, s := range []string{"refapp", "a) R 1 2 3", "))))", "(", " ", "x\ny", ") 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, comm string) {
		line := fmt.Sprintf("4242 (%s) S 1 4242 4242 0 -1 4194560 1 0 0 0 150 50 25 25 20 0 1 0 100 10000000 321 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n", comm)
		pg, cpu, rss, _, ok := parseStat([]byte(line))
		if !ok || pg != 4242 || cpu != 2.5 || rss != 321 {
			t.Fatalf("comm %q: pgrp %d cpu %v rss %v ok %v", comm, pg, cpu, rss, ok)
		}
	})
}
