//go:build linux

// Package realserver is an end-to-end test suite that runs boincd against a
// real BOINC project server: upstream BOINC's scheduler CGI, file upload
// handler, PHP web RPCs, MariaDB and project daemons (feeder, transitioner,
// validator, assimilator, file deleter), stood up on loopback by the shared
// harness scripts in ../shared/realserver (setup.sh, run_client.sh,
// make_work.sh, import_test.sh, teardown.sh). The C++ BOINC client
// (/usr/bin/boinc) runs the same jobs as the reference.
//
// Each run gets its own server instance: a fresh RS_ROOT under /tmp, free
// HTTP and MariaDB ports in 33100-33899 and free GUI RPC ports in
// 33000-33999; the teardown stops only what that instance started (by its
// pid files) and purges it. The subtests, run one after the other so their
// timings compare, are: cpp (the C++ client, attached over GUI RPC), boincd
// (boincd built from this tree, attached over GUI RPC), boincd_config
// (boincd attached by the account key in its boincd.toml) and import (the
// C++ client's data dir taken over by boincd import). Each must get its N
// jobs validated with no client errors, some credit, and no CRITICAL or
// parse-error line in the scheduler log for its requests. The suite ends
// with a side-by-side table of the timings. Then the feature cases
// (cases_test.go, httpscase_test.go, apicases_test.go, failcases_test.go:
// gzipped input, a busy scheduler, anonymous platform, the project over
// TLS only, trickle messages, BOINC's wrapper in a version without and
// with api_version, a job past its elapsed-time limit, a job the project
// cancels while it runs, an input whose first URL is dead) run both
// clients at once, each on its own account, and end with a table of what
// each client did. BOINCD_REALSERVER_CASES=a,b runs only the named
// feature cases.
//
// The suite needs root, the shared scripts, boinccmd and the server
// packages; without them it skips, unless BOINCD_REQUIRE_REALSERVER=1 (set
// by .ci/run), which turns every such skip into a failure. See
// docs/realserver.md.
//
// The package has no code outside its tests; this file only documents it.
package realserver
