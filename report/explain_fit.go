package report

import "github.com/mqplan/mqplan/plans"

// ShardNeeds are the peak resources of each process of a run split by a,
// counted as mqplan explain --shards counts them: one descriptor per owned
// client plus slack. An embedded broker is not in any shard's figure: it
// runs in the --workers parent (mqplan run checks that process apart).
func ShardNeeds(prog *plans.Program, a *plans.Assignment) []Needs {
	return shardNeeds(prog, a.Shard, a.Shards)
}

// ClientsFit says whether n connections and the slack fit one process
// under l: the test the parent of --workers passes for the embedded
// broker's side of every connection.
func ClientsFit(n int, l Limits) bool {
	return l.OpenFiles <= 0 || n+descriptorSlack <= l.OpenFiles
}
