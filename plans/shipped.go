package plans

import "embed"

// Shipped holds the example plans that ship with mqplan (plans/*.yaml),
// so tests and tools can reach them without knowing the checkout layout.
//
//go:embed *.yaml
var Shipped embed.FS
