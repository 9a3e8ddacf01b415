// Package apptest proves that boincd drives real BOINC-API science apps.
//
// The package has no code of its own, only tests. TestMain compiles
// testdata/apiapp.cpp against the BOINC API library that Debian ships
// in libboinc-app-dev 7.20 (headers in /usr/include/boinc, libraries
// libboinc_api and libboinc):
//
//	g++ -o apiapp_1.00_x86_64-pc-linux-gnu apiapp.cpp -O2 -Wall \
//	    -I/usr/include/boinc -lboinc_api -lboinc -lpthread
//
// The tests then serve that binary from a testproject server with
// api_version 7.20.5 and run it under an in-process daemon, controlling
// it the way a volunteer does: over GUI RPC (suspend_result,
// resume_result, abort_result) and by stopping the daemon. They check
// progress, CPU time and checkpoints read from shared memory, suspend and
// resume by message, quit and restart from the app's own checkpoint,
// abort, and the memory limit (TestMemoryLimit is skipped until the
// daemon hands rsc_memory_bound to the runner). TestElapsedLimitAbortsAPIApp
// shows a task past its elapsed-time limit is asked to abort and exits by
// itself before the abort timeout, with the C++ client's event log line;
// TestAPIAppWithoutAPIVersion runs the app in a version without
// api_version (as BOINC's wrapper often ships) and shows its progress is
// its own and it is suspended by message. A shell-script app
// without api_version checks the signal path (SIGSTOP/SIGCONT/SIGKILL of
// the process group) for plain programs.
//
// Client liveness is checked with the real library too:
// TestClientPIDIsDaemon shows init_data.xml names boincd's own pid as
// client_pid (and shm_key -1), and that the app passes the library's
// kill(client_pid, 0) check against it; TestAppExitsWhenClientGone and
// TestAppExitsWithoutHeartbeat run the app in a hand-made slot and show
// it exits by itself, without finishing, within 10 s of its client_pid
// dying, or 30 s after start when client_pid is 0 and no heartbeat comes,
// and that heartbeats once a second keep it running.
//
// Without the library (or a C++ compiler) every real-API test is skipped
// with a message saying to install libboinc-app-dev, except when CI=true,
// where they fail instead: CI never skips them.
//
// # Which shared memory the real library attaches to
//
// BOINC has two shared-memory mechanisms on Unix, and the app side picks
// one from init_data.xml alone (api/boinc_api.cpp setup_shared_mem):
// shm_key -1 makes it map the file boinc_mmap_file in its working
// directory (lib/shmem.cpp attach_shmem_mmap); any other value is taken as
// a System V key and attached with shmget/shmat (attach_shmem). The C++
// client chooses by the app version's api_version: 6.0 or later gets the
// mmap file and shm_key -1; versions without an api_version (plain
// programs such as the reference capture's refapp, whose init_data.xml
// carries shm_key 16818291) get a System V segment keyed by
// ftok(init_data.xml), which plain programs never read, while an app
// linked with the API (the wrapper) attaches and reports through it.
//
// TestSharedMemoryMechanisms runs the Debian 7.20.5 library both ways and
// both work: app_status messages with fraction_done arrive through the
// mmap file and through a System V segment alike, and nothing arrives in
// the standalone control run. TestProgressFromSharedMemory shows the mmap
// file works under boincd itself.
//
// boincd uses the mmap file (shm_key -1) for every task, api_version or
// not, and that is the one to keep, because it is the mechanism the real
// library attaches to reliably:
//
//   - It is what the C++ client gives every app built against API 6 or
//     later, so it is the path real science apps are built and tested
//     against; System V is only the legacy path for pre-6 apps.
//   - The file lives in the slot directory: its name is fixed, it cannot
//     collide with another slot or another client, and it goes away with
//     the slot. A System V segment lives in a host-wide namespace:
//     ftok keys can collide, a crashed client leaks segments until
//     reboot, the kernel's shmmni/shmall limits apply, and systemd's
//     RemoveIPC=yes (the default for non-system users) deletes a user's
//     segments when that user's last session ends, cutting running apps
//     off from the client.
//   - It needs no IPC namespace sharing: an app in a container or
//     sandbox that can see its slot directory can attach, while
//     System V needs the same IPC namespace as the client.
//
// The only apps that would need System V are those built against an API
// older than 6.0 (2008), which predate the mmap file.
package apptest
