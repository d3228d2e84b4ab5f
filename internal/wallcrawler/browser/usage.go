package browser

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTick is the unit of the CPU times in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux architecture quarry runs on).
const clockTick = 10 * time.Millisecond

// ProcUsage is what a browser's processes consume, as the kernel reports
// it in /proc.
type ProcUsage struct {
	// CPU is the processor time (user and system) of the group's live
	// processes, including that of the children they have reaped (a
	// renderer that ended counts through its zygote).
	CPU time.Duration
	// RSS is the sum of the resident set sizes (VmRSS) of the group's
	// processes, in bytes. Pages shared between them (Chromium's zygote
	// forks its renderers) are counted once per process, so it overstates.
	RSS int64
	// PSS is the sum of the processes' proportional set sizes, in bytes
	// (from /proc/<pid>/smaps_rollup): a shared page counts a share per
	// process, so the sum is the group's real footprint. 0 when the kernel
	// does not provide it or it is not readable.
	PSS int64
	// Procs is how many processes the group has.
	Procs int
}

// Memory is the group's memory footprint: PSS when known, else RSS.
func (u ProcUsage) Memory() int64 {
	if u.PSS > 0 {
		return u.PSS
	}
	return u.RSS
}

// SampleGroups reads /proc once and returns the usage of each process
// group in pgids (a browser's group id is its main process's PID, see
// Browser.PID). A group without live processes is absent from the result.
// Processes of other users are included: reading /proc/<pid>/stat needs no
// privilege; smaps_rollup (PSS) does for another user's process, which
// root has. The cost is one small read per process on the machine, and a
// walk of the memory map of each process of the groups.
func SampleGroups(pgids ...int) (map[int]ProcUsage, error) { return sampleGroups(true, pgids) }

// SampleGroupsCPU is SampleGroups without the memory figures (RSS and PSS
// are 0): one small read per process on the machine, no walk of memory
// maps (which also holds up the walked process).
func SampleGroupsCPU(pgids ...int) (map[int]ProcUsage, error) { return sampleGroups(false, pgids) }

func sampleGroups(memory bool, pgids []int) (map[int]ProcUsage, error) {
	want := make(map[int]bool, len(pgids))
	for _, g := range pgids {
		if g > 0 {
			want[g] = true
		}
	}
	out := map[int]ProcUsage{}
	if len(want) == 0 {
		return out, nil
	}
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("browser: sample usage: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("browser: sample usage: %w", err)
	}
	page := int64(os.Getpagesize())
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		data, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		st, ok := parseStat(data)
		if !ok || !want[st.pgrp] {
			continue
		}
		u := out[st.pgrp]
		u.CPU += time.Duration(st.utime+st.stime+st.cutime+st.cstime) * clockTick
		if memory {
			u.RSS += st.rssPages * page
			u.PSS += readPSS(name)
		}
		u.Procs++
		out[st.pgrp] = u
	}
	return out, nil
}

// readPSS returns the Pss line of /proc/<pid>/smaps_rollup in bytes, 0
// when it cannot be read.
func readPSS(pid string) int64 {
	data, err := os.ReadFile("/proc/" + pid + "/smaps_rollup")
	if err != nil {
		return 0
	}
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("Pss:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest) // "12345 kB"
		if len(f) == 0 {
			return 0
		}
		kb, _ := strconv.ParseInt(string(f[0]), 10, 64)
		return kb << 10
	}
	return 0
}

// procStat is the part of /proc/<pid>/stat SampleGroups uses.
type procStat struct {
	pgrp                         int
	utime, stime, cutime, cstime int64
	rssPages                     int64
}

// parseStat decodes /proc/<pid>/stat (proc(5)). The command name, in
// parentheses, may itself hold spaces and parentheses, so fields are
// counted from the last ')'.
func parseStat(data []byte) (procStat, bool) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, false
	}
	// Fields after the name: state(3) ppid(4) pgrp(5) … utime(14)
	// stime(15) cutime(16) cstime(17) … rss(24); f[0] is field 3.
	f := bytes.Fields(data[i+1:])
	if len(f) < 22 {
		return procStat{}, false
	}
	num := func(k int) int64 {
		n, _ := strconv.ParseInt(string(f[k]), 10, 64)
		return n
	}
	return procStat{
		pgrp: int(num(2)), utime: num(11), stime: num(12), cutime: num(13), cstime: num(14),
		rssPages: num(21),
	}, true
}
