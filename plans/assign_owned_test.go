package plans

import (
	"fmt"
	"slices"
	"testing"
)

// TestExpectedOwned: for every shipped plan split over 2 and 3 shards,
// each shard's ExpectedOwned table of each publisher equals a brute-force
// count of its receivers by owned group and elsewhere, and the owned
// part adds up to ExpectedByShard's figure for that shard.
func TestExpectedOwned(t *testing.T) {
	for name, prog := range assignCases(t) {
		for _, n := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				a, err := Assign(prog, n)
				if err != nil {
					t.Fatal(err)
				}
				nGroups := len(prog.Groups)
				for s := range n {
					tables, err := ExpectedOwned(prog, a.Mask(s))
					if err != nil {
						t.Fatal(err)
					}
					for p := range prog.Clients {
						if prog.Clients[p].Publish == nil {
							continue
						}
						want := make([]int, nGroups+1)
						for _, c := range receivers(prog, p) {
							if int(a.Shard[c]) == s {
								want[prog.Clients[c].Group]++
							} else {
								want[nGroups]++
							}
						}
						got := tables[p]
						if !slices.Equal(got, want) {
							t.Fatalf("shard %d, publisher %d: %v, brute force %v", s, p, got, want)
						}
						owned := 0
						for _, k := range got[:nGroups] {
							owned += k
						}
						if owned != a.ExpectedByShard[p][s] {
							t.Fatalf("shard %d, publisher %d: %d owned deliveries, ExpectedByShard %d", s, p, owned, a.ExpectedByShard[p][s])
						}
					}
				}
			})
		}
	}
}
