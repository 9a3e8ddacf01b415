//go:build !linux

package hostcond

import (
	"errors"

	"github.com/shirou/gopsutil/v3/cpu"
)

var errNoCPUTimes = errors.New("host CPU times: none reported")

// hostCPUTimes sums the host's CPU times. Busy leaves out idle, iowait
// (waiting, not computing) and steal (time the hypervisor gave to other
// guests); guest time is already inside user.
func hostCPUTimes() (busy, total float64, err error) {
	ts, err := cpu.Times(false)
	if err != nil {
		return 0, 0, err
	}
	if len(ts) == 0 {
		return 0, 0, errNoCPUTimes
	}
	t := ts[0]
	busy = t.User + t.Nice + t.System + t.Irq + t.Softirq
	return busy, busy + t.Idle + t.Iowait + t.Steal, nil
}
