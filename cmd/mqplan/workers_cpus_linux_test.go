//go:build linux

package main

import (
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStartOn: a child started by startOn runs on the CPUs given, as the
// kernel says (/proc/self/status of the child), and the thread that forked
// it has its own affinity back.
func TestStartOn(t *testing.T) {
	allowed := allowedCPUs()
	if len(allowed) < 2 {
		t.Skipf("this process may run on %d CPU(s): confining a child to fewer cannot be seen", len(allowed))
	}
	last := allowed[len(allowed)-1]
	runtime.LockOSThread() // startOn's thread is this one: its affinity is checked after
	defer runtime.UnlockOSThread()
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("grep", "^Cpus_allowed_list:", "/proc/self/status")
	var out strings.Builder
	cmd.Stdout = &out
	if err := startOn(cmd, []int{last}); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if got, want := strings.Join(strings.Fields(out.String()), " "), "Cpus_allowed_list: "+strconv.Itoa(last); got != want {
		t.Errorf("the child's %q, want %q", got, want)
	}
	var after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("the forking thread's affinity: %d CPUs after, %d before", after.Count(), before.Count())
	}
}
