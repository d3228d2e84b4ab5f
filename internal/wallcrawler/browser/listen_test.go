package browser

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// listeningPorts returns the TCP ports on which a process of the process
// group pgid listens, as "pid:port".
func listeningPorts(t *testing.T, pgid int) []string {
	t.Helper()
	procs, err := listProcs()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range procs {
		if p.pgid != pgid {
			continue
		}
		inodes := map[string]bool{}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.pid))
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", p.pid), fd.Name()))
			if err == nil && strings.HasPrefix(link, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
			}
		}
		for _, table := range []string{"tcp", "tcp6"} {
			f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", p.pid, table))
			if err != nil {
				continue
			}
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				// sl local_address rem_address st ... uid timeout inode
				fields := strings.Fields(sc.Text())
				if len(fields) < 10 || fields[3] != "0A" || !inodes[fields[9]] {
					continue
				}
				_, hexPort, _ := strings.Cut(fields[1], ":")
				port, _ := strconv.ParseUint(hexPort, 16, 16)
				out = append(out, fmt.Sprintf("%d:%d", p.pid, port))
			}
			_ = f.Close()
		}
	}
	return out
}
