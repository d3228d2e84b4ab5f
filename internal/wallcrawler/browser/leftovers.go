package browser

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// procInfo describes one process found in /proc.
type procInfo struct {
	pid     int
	pgid    int
	state   byte
	cmdline string
}

// listProcs returns every process in /proc that is not a zombie (or dead)
// and is not the calling process. Processes that vanish while being read are
// skipped.
func listProcs() ([]procInfo, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("browser: read /proc: %w", err)
	}
	self := os.Getpid()
	var procs []procInfo
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name in parentheses may contain anything; the fields
		// after the last ')' are "state ppid pgrp ...".
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 3 || len(fields[0]) != 1 {
			continue
		}
		state := fields[0][0]
		if state == 'Z' || state == 'X' || state == 'x' {
			continue
		}
		pgid, err := strconv.Atoi(fields[2])
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		procs = append(procs, procInfo{
			pid:     pid,
			pgid:    pgid,
			state:   state,
			cmdline: string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})),
		})
	}
	return procs, nil
}

// matchProcs returns the processes whose command line contains needle, plus
// the live members of process groups led by such a process (Chromium's
// renderers do not always repeat the directory on their command line).
func matchProcs(procs []procInfo, needle string) []procInfo {
	leaders := map[int]bool{}
	for _, p := range procs {
		if strings.Contains(p.cmdline, needle) {
			leaders[p.pid] = true
		}
	}
	var out []procInfo
	for _, p := range procs {
		if strings.Contains(p.cmdline, needle) || leaders[p.pgid] {
			out = append(out, p)
		}
	}
	return out
}

// Leftovers returns the PIDs of live (non-zombie) processes whose command
// line contains workDir, plus the members of process groups led by such a
// process. It scans /proc/*/cmdline. Use it after tests ("no Chromium left")
// and at start-up to find the orphans of a crashed server.
func Leftovers(workDir string) ([]int, error) {
	if workDir == "" {
		return nil, errors.New("browser: leftovers: empty work dir")
	}
	procs, err := listProcs()
	if err != nil {
		return nil, fmt.Errorf("browser: leftovers: %w", err)
	}
	var pids []int
	for _, p := range matchProcs(procs, workDir) {
		pids = append(pids, p.pid)
	}
	slices.Sort(pids)
	return pids, nil
}

// KillLeftovers sends SIGKILL to the processes Leftovers finds for workDir
// and to their process groups (never to the caller's own group). It returns
// how many processes it found.
func KillLeftovers(workDir string) (int, error) {
	if workDir == "" {
		return 0, errors.New("browser: kill leftovers: empty work dir")
	}
	procs, err := listProcs()
	if err != nil {
		return 0, fmt.Errorf("browser: kill leftovers: %w", err)
	}
	matched := matchProcs(procs, workDir)
	killProcs(matched)
	return len(matched), nil
}

// killProcs sends SIGKILL to every process in procs and to its process
// group, except the caller's own process group.
func killProcs(procs []procInfo) {
	own := syscall.Getpgrp()
	groups := map[int]bool{}
	for _, p := range procs {
		if p.pgid > 1 && p.pgid != own && !groups[p.pgid] {
			groups[p.pgid] = true
			_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		}
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
}
