package plans

import "flag"

// update rewrites golden files instead of comparing with them:
// go test ./plans -run TestLoad -update
var update = flag.Bool("update", false, "rewrite golden files")
