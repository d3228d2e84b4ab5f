package report

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// userHZ is the clock tick of /proc/PID/stat's times (USER_HZ, 100 on
// Linux).
const userHZ = 100

// SelfCPU returns this process's user + system CPU time (getrusage).
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ProcStat returns the fields of /proc/PID/stat after the command name
// (state is 0, ppid 1, utime 11, stime 12, cutime 13, cstime 14), or nil
// when the process is gone.
func ProcStat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	return strings.Fields(s)
}

// StatCPU sums the CPU times at the given indexes of ProcStat's fields
// (11, 12: the process's user and system time; 13, 14: its reaped
// children's).
func StatCPU(f []string, idx ...int) time.Duration {
	var ticks int64
	for _, i := range idx {
		if i < len(f) {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += v
		}
	}
	return time.Duration(ticks) * time.Second / userHZ
}

// ProcCPU returns process pid's user + system CPU time from /proc (10 ms
// ticks), with its reaped children's when children is set; 0 when the
// process is gone.
func ProcCPU(pid int, children bool) time.Duration {
	f := ProcStat(pid)
	if children {
		return StatCPU(f, 11, 12, 13, 14)
	}
	return StatCPU(f, 11, 12)
}
