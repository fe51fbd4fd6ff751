package main

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/mqplan/mqplan/plans"
)

// maxSourceAddresses bounds --source-addresses: far more than one
// machine's interfaces hold, far fewer than would slow parsing.
const maxSourceAddresses = 1024

// parseSourceAddresses reads --source-addresses A,B,...: IP literals, as
// the plan's broker.source_addresses are.
func parseSourceAddresses(s string) ([]string, error) {
	parts := strings.Split(s, ",")
	if len(parts) > maxSourceAddresses {
		return nil, fmt.Errorf("--source-addresses: %d addresses, at most %d", len(parts), maxSourceAddresses)
	}
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		a, err := netip.ParseAddr(strings.TrimSpace(p))
		if err != nil {
			return nil, fmt.Errorf("--source-addresses %q: %q is not an IP address like 10.0.0.7 or ::1", s, p)
		}
		out = append(out, a.String())
	}
	return out, nil
}

// bindSources binds the clients owned to the addresses own, round-robin
// in client order. A shard's choice of its local addresses changes
// neither the plan's hash nor the assignment: only where its own
// connections come from.
func bindSources(prog *plans.Program, owned []bool, own []string) {
	k := 0
	for c := range prog.Clients {
		if owned[c] {
			prog.Clients[c].SourceAddr = own[k%len(own)]
			k++
		}
	}
}
