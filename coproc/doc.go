// Package coproc probes the host: CPUs, memory, disk, operating system and
// CPU speed, filling boinc.Host the way the C++ client fills <host_info>.
// Each probe is small and independent; a probe that fails leaves its fields
// zero and says why, it never stops the daemon.
package coproc
