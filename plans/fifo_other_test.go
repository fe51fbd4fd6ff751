//go:build !unix

package plans

import "errors"

// mkfifo fails where there are no FIFOs in the file system (Windows).
func mkfifo(string) error { return errors.ErrUnsupported }
