//go:build !linux

package coord

// bootID is empty where the host's boot id cannot be read: shards there
// always align through the clock samples.
func bootID() string { return "" }

// monoNow is unavailable off Linux.
func monoNow() (int64, bool) { return 0, false }
