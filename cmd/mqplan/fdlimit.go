package main

import (
	"fmt"

	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/report"
)

// Past the open-file limit a run does not stop: its connects fail with
// EMFILE ("too many open files") midway through the ramp, the clients
// that did not connect send nothing, and the report fails with a count
// of clients that never connected and no word of the cause. These checks
// refuse such a run before anything connects, with the descriptors it
// needs (as mqplan explain counts them) and what would fit: the process
// count --workers needs, or a broker of its own.

// fitsOneProcess refuses a run in one process (no --workers, no --shard)
// that needs more descriptors than the process may open.
func fitsOneProcess(prog *plans.Program, l report.Limits) error {
	n := report.ComputeNeeds(prog)
	if l.OpenFiles <= 0 || n.FileDescriptors <= l.OpenFiles {
		return nil
	}
	what := fmt.Sprintf("%d connections", n.Connections)
	if prog.Plan.Broker.IsEmbedded() {
		what += " with the embedded broker holding the other end of each in the same process"
	}
	return invalid(fmt.Errorf("the plan needs %d file descriptors (%s) but this process may open %d (ulimit -Hn): past that, connects fail midway with \"too many open files\"; %s",
		n.FileDescriptors, what, l.OpenFiles, fitAdvice(prog, l)))
}

// fitAdvice says how the plan fits this machine's limit: as --workers
// processes (the embedded broker, which the parent hosts, still holds
// every connection's other end in one process), or not at all here.
func fitAdvice(prog *plans.Program, l report.Limits) string {
	if prog.Plan.Broker.IsEmbedded() && !report.ClientsFit(len(prog.Clients), l) {
		return "no number of processes lifts that for the embedded broker: give a broker of its own (--broker URL), and --workers"
	}
	w, err := autoWorkers(prog, l.OpenFiles)
	if err != nil {
		return "lower the client count"
	}
	procs := fmt.Sprintf("%d worker processes", w)
	if w == 1 {
		procs = "one worker process"
	}
	if prog.Plan.Broker.IsEmbedded() {
		return fmt.Sprintf("run its clients in %s apart from the broker: mqplan run --workers %d (or --workers auto)", procs, w)
	}
	return fmt.Sprintf("run it as %s: mqplan run --workers %d (or --workers auto)", procs, w)
}

// fitsShards refuses a run split by a whose shard only (all shards when
// only < 0) needs more descriptors than one process may open, and, for
// the --workers parent (embedded set), an embedded broker whose side of
// every connection does not fit the parent. more says what to add:
// workers or shards.
func fitsShards(prog *plans.Program, a *plans.Assignment, l report.Limits, only int, embedded bool, more string) error {
	if l.OpenFiles <= 0 {
		return nil
	}
	if embedded && !report.ClientsFit(len(prog.Clients), l) {
		return invalid(fmt.Errorf("the embedded broker, in this process, would hold the other end of all %d connections but the process may open %d files (ulimit -Hn): give a broker of its own (--broker URL)",
			len(prog.Clients), l.OpenFiles))
	}
	needs := report.ShardNeeds(prog, a)
	for s, n := range needs {
		if (only < 0 || s == only) && n.FileDescriptors > l.OpenFiles {
			return invalid(fmt.Errorf("shard %d/%d needs %d file descriptors (%d connections) but a process may open %d (ulimit -Hn): past that, connects fail midway with \"too many open files\"; %s",
				s, a.Shards, n.FileDescriptors, n.Connections, l.OpenFiles, more))
		}
	}
	return nil
}
