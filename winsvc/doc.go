// Package winsvc runs boincd as a Windows service.
//
// Everything that can be decided without Windows lives in untagged files
// so it is tested on Linux: the service's names, the ProgramData layout,
// the command line the Service Control Manager (SCM) starts, the account
// the service runs under and the data directory's ACL, the control state
// machine (which status to report for each control request, when to
// cancel the daemon and when to reload it), the loop that drives a Runner
// under that machine, and a slog.Handler that writes to the Windows event
// log through the EventWriter interface.
//
// The *_windows.go files only adapt these to golang.org/x/sys/windows/svc
// (the svc.Handler), svc/mgr (install, uninstall, start, stop, recovery
// actions) and svc/eventlog (the event source). The portable types carry
// the same numeric values as their Win32 counterparts, which the Windows
// files assert at compile time.
//
// README.md says why the service runs under its virtual account by
// default and what that means for GPUs.
package winsvc

// Name is the service's key name (sc.exe, net start) and its event source.
const Name = "boincd"

// DisplayName is what services.msc shows.
const DisplayName = "boincd volunteer computing client"

// Description is the service's description in services.msc.
const Description = "Runs BOINC-compatible volunteer computing tasks in the background " +
	"(data and boincd.toml in %ProgramData%\\boincd)."
