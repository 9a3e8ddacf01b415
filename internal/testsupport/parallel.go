package testsupport

import (
	"flag"
	"strconv"
)

// WaitingParallel is how many parallel tests a package whose tests spend
// their time waiting (on daemons, servers and apps in other processes,
// on the daemon's own intervals) runs at once. go test's default is
// GOMAXPROCS, which suits tests that compute: on CI's 2 CPUs it left
// these packages' CPUs 60 % idle while their tests queued two at a time
// (issue 32). 4 already puts the longest test of e2e and of daemon on
// their critical path; 8 was no faster in all, and its peaks starved the
// tests that measure an app's CPU time (apptest, the C++ client's
// suspend-on-load) of CPU.
const WaitingParallel = 4

// RaiseParallel sets -test.parallel to n for the package, unless the
// command line set it (go test -parallel N wins) or it is already higher.
// TestMain calls it before m.Run.
func RaiseParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	f := flag.Lookup("test.parallel")
	if given || f == nil {
		return
	}
	if cur, err := strconv.Atoi(f.Value.String()); err == nil && cur >= n {
		return
	}
	_ = f.Value.Set(strconv.Itoa(n))
}
