package plans

// ExpectedOwned splits the deliveries one message of each publisher
// implies between the receivers owned marks (a shard's clients, by global
// index) and all others: table[g], for g below len(prog.Groups), counts
// the owned receivers of group g, and table[len(prog.Groups)] the
// receivers elsewhere. A shard uses it when the run is over to account,
// by receiving group, for messages of any shard's publishers whose
// deliveries only it could see arrive. A $share group is whole on one
// shard (Assign keeps it so) and is credited to the group of its first
// member, as Compile does. It is the trie walk Compile counts Expected
// with, so the tables agree with it to the delivery; tables are shared
// between publishers with the same pattern and must not be written.
func ExpectedOwned(prog *Program, owned []bool) ([][]int, error) {
	elsewhere := len(prog.Groups)
	share := make([]int, prog.ShareGroups())
	for k := range share {
		share[k] = -1
	}
	for i := range prog.Clients {
		for _, s := range prog.Clients[i].Subscriptions {
			if s.ShareKey >= 0 && share[s.ShareKey] < 0 {
				share[s.ShareKey] = elsewhere
				if owned[i] {
					share[s.ShareKey] = prog.Clients[i].Group
				}
			}
		}
	}
	cl := deliveryClasses{n: elsewhere + 1, share: share, noun: "groups",
		of: func(c int) int {
			if owned[c] {
				return prog.Clients[c].Group
			}
			return elsewhere
		}}
	out := make([][]int, len(prog.Clients))
	err := expectationTables(prog, cl, func(c int, table []int) { out[c] = table })
	return out, err
}
