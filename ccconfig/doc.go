// Package ccconfig reads the two files volunteers tune the C++ BOINC
// client with, cc_config.xml (data directory) and app_config.xml (one per
// project directory), as the C++ client reads them: unknown elements are
// named and skipped, a bad value is reported with its file and line and
// the rest of the file still applies. It only parses; the daemon decides
// what each setting does and how it combines with boincd.toml.
package ccconfig
