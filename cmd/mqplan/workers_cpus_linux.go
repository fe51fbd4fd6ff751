//go:build linux

package main

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// allowedCPUs lists the CPUs this process may run on (its affinity: a
// container's cpuset, a user's taskset), nil when it cannot be read.
func allowedCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var cpus []int
	for c := range len(set) * 64 {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// startOn starts cmd confined to cpus (nil: as this process). A child
// inherits the affinity of the thread that forks it, so the fork runs on
// a thread locked to this goroutine and confined for the occasion, then
// given its own affinity back.
func startOn(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return fmt.Errorf("read the CPU affinity: %w", err)
	}
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("confine the worker to CPUs %v: %w", cpus, err)
	}
	err := cmd.Start()
	if rerr := unix.SchedSetaffinity(0, &old); rerr != nil {
		err = errors.Join(err, fmt.Errorf("restore the CPU affinity: %w", rerr))
	}
	return err
}
