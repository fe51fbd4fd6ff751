package main

// workerCPUs is where the --workers children may run: nil (anywhere this
// process may) unless n children of at least one CPU each would use more
// CPUs than the run may (procs: --procs, or by default half the CPUs when
// the broker is on this machine, so that the broker keeps the rest). Then
// they share the first procs CPUs this process may run on, as one process
// with GOMAXPROCS procs would: measured on 2 cores beside Mosquitto, two
// children on one CPU cost 13 % less CPU than two children free to use
// both (bench/README.md, "--workers overhead").
func workerCPUs(allowed []int, procs, n int) []int {
	if procs <= 0 || procs >= n || len(allowed) <= procs {
		return nil
	}
	return allowed[:procs]
}
