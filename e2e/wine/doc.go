//go:build linux

// Package wine is an end-to-end test that runs the Windows build of boincd
// under Wine 8 (Debian 12's wine64) on Linux, so every change is checked on
// the Windows code paths a Linux CI machine can reach: the service
// dispatcher and controls, Windows process creation, the shared-memory
// channel to a BOINC-API app (a file mapping), suspend and resume by
// message, CPU times from GetProcessTimes, Windows paths and file renames.
//
// One test, TestWindowsBuildUnderWine, builds boincd.exe and
// boincd-demo.exe (GOOS=windows) and a 4 KB bcryptprimitives.dll (from
// testdata, with the mingw-w64 assembler and linker: Go 1.22 and later
// programs load it from System32 for ProcessPrng, which Wine 8 lacks),
// makes a fresh WINEPREFIX and keeps one Wine user process alive (Wine
// ends services.exe and its services once no user process is left). Then,
// one after the other:
//
//   - demo: boincd-demo.exe with 4 tasks; all succeed and are acknowledged.
//   - run: a foreground boincd.exe run attached to internal/testproject on
//     127.0.0.1 serving the demo app as a Windows app, driven by the Linux
//     boinccmd: the task runs, is suspended and resumed, checkpoints, is
//     uploaded and reported; the scheduler request names the platform
//     windows_x86_64 with the alternate windows_intelx86.
//   - service: boincd.exe service install --manual, net start, a task
//     that checkpoints, net stop, net start, the task resumes from its
//     checkpoint and is reported, net stop, service uninstall.
//
// It ends with a table (what, result, seconds), in the test log and in
// the file BOINCD_WINE_REPORT names (.ci/run prints it). Without wine64,
// the mingw-w64 binutils or boinccmd the test skips, unless
// BOINCD_REQUIRE_WINE=1 (set by .ci/run), which makes that a failure.
//
// What Wine cannot show: ACLs (Wine does not enforce them on its Unix
// files), the Application event log as Windows keeps it, job objects and
// their accounting, antivirus file locks, and Windows' own service manager
// (Wine's services.exe is a reimplementation).
//
// The package has no code outside its tests; this file only documents it.
package wine
