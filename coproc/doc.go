// Package coproc probes the host: CPUs, memory, disk, operating system,
// CPU speed (Whetstone and Dhrystone benchmarks) and NVIDIA GPUs through
// NVML, filling boinc.Host and <coproc_cuda> the way the C++ client fills
// <host_info> and <coprocs>. Each probe is small and independent; a probe
// that fails leaves its fields zero and says why, it never stops the
// daemon. NVML runs in-process behind a timeout (the C++ client uses a
// child process): a hung driver cannot block the daemon. Builds without
// cgo, or outside Linux, report no GPU and say why.
package coproc
