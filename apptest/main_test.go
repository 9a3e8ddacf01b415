package apptest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// apiAppName is the compiled test app's file name, in the BOINC style
// NAME_VERSION_PLATFORM.
const apiAppName = "apiapp_1.00_x86_64-pc-linux-gnu"

// skipMsg is what every real-API test says when the library is missing.
const skipMsg = "install libboinc-app-dev (apt-get install libboinc-app-dev) to run the real BOINC API tests"

// builtApp is the outcome of building testdata/apiapp.cpp once for the
// whole package: the binary's path, or why there is none. It is set by
// TestMain before any test runs and only read afterwards.
type builtApp struct {
	path    string
	missing error // the BOINC library or a compiler is not installed
	broken  error // the library is there but the build failed
}

var apiApp builtApp

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "apptest-build-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "apptest: temp dir:", err)
		os.Exit(1)
	}
	apiApp = buildAPIApp(dir)
	code := m.Run()
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, "apptest: remove build dir:", err)
	}
	os.Exit(code)
}

// compilerFlags are the flags the test app is built with, after the
// source and output: Debian's libboinc-app-dev puts the headers in
// /usr/include/boinc and ships both shared and static libraries; the
// shared ones are used (the app runs on the machine it was built on).
// libboinc_api needs libboinc, which needs pthreads.
var compilerFlags = []string{"-O2", "-Wall", "-I/usr/include/boinc", "-lboinc_api", "-lboinc", "-lpthread"}

// buildAPIApp compiles testdata/apiapp.cpp with the system C++ compiler
// ($CXX, else g++, else c++, else clang++).
func buildAPIApp(dir string) builtApp {
	candidates := []string{"g++", "c++", "clang++"}
	if env := os.Getenv("CXX"); env != "" {
		candidates = []string{env}
	}
	cxx := ""
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil {
			cxx = p
			break
		}
	}
	if cxx == "" {
		return builtApp{missing: fmt.Errorf("no C++ compiler found (tried %s; set CXX or install g++)", strings.Join(candidates, ", "))}
	}
	if _, err := os.Stat("/usr/include/boinc/boinc_api.h"); err != nil {
		return builtApp{missing: fmt.Errorf("BOINC API headers: %w", err)}
	}
	src, err := filepath.Abs(filepath.Join("testdata", "apiapp.cpp"))
	if err != nil {
		return builtApp{broken: fmt.Errorf("test app source: %w", err)}
	}
	out := filepath.Join(dir, apiAppName)
	args := append([]string{"-o", out, src}, compilerFlags...)
	cmd := exec.Command(cxx, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := fmt.Errorf("%s %s: %w\n%s", cxx, strings.Join(args, " "), err, stderr.String())
		// A linker that cannot find the library means it is not
		// installed; anything else is a real build failure.
		if strings.Contains(stderr.String(), "cannot find -lboinc") {
			return builtApp{missing: msg}
		}
		return builtApp{broken: msg}
	}
	return builtApp{path: out}
}

// needAPIApp returns the compiled test app's path. Without the BOINC
// library the test is skipped, except under CI=true, where these tests
// must always run.
func needAPIApp(t *testing.T) string {
	t.Helper()
	switch {
	case apiApp.broken != nil:
		t.Fatalf("building the BOINC API test app: %v", apiApp.broken)
	case apiApp.missing != nil:
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (CI=true: these tests may not be skipped): %v", skipMsg, apiApp.missing)
		}
		t.Skipf("%s: %v", skipMsg, apiApp.missing)
	}
	return apiApp.path
}
