//go:build !linux

package main

import "os/exec"

// allowedCPUs is nil where the affinity is not read: the children run
// wherever the system puts them.
func allowedCPUs() []int { return nil }

// startOn starts cmd; cpus is not applied off Linux.
func startOn(cmd *exec.Cmd, cpus []int) error { return cmd.Start() }
