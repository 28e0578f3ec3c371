package testbed

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// What a process of the bed costs, read from /proc: the benchmarks weigh
// the controller's and the switch's CPU against the work they did.

// userHZ is the unit of the times in /proc/PID/stat (USER_HZ): the kernel
// gives user space 100 ticks a second on every architecture Go runs on.
const userHZ = 100

// ProcessCPU is the CPU time process pid has used so far, in user and
// kernel mode, its threads together (those that ended included), to the
// nearest 10 ms.
func ProcessCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseProcessCPU(data)
}

// parseProcessCPU reads utime and stime, the 14th and 15th fields, from a
// /proc/PID/stat.
func parseProcessCPU(stat []byte) (time.Duration, error) {
	f := statFields(stat)
	const utime, stime = 14 - 3, 15 - 3 // fields after the name start at the 3rd
	if len(f) <= stime {
		return 0, fmt.Errorf("process stat %q: too few fields", stat)
	}
	var ticks int64
	for _, s := range f[utime : stime+1] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("process stat: CPU time %q: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// statFields are the fields of a /proc/PID/stat that follow the command
// name, the process state first. The name is in parentheses and may
// itself hold spaces or parentheses, so it ends at the last ')'.
func statFields(stat []byte) []string {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(stat[i+1:]))
}

// ProcessRSS is the resident set size of process pid in bytes (VmRSS).
func ProcessRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
