//go:build !linux

package mqttc

import "syscall"

// bindNoPort does nothing where IP_BIND_ADDRESS_NO_PORT does not exist:
// the local port of a dial from a source address is chosen at bind.
func bindNoPort(_, _ string, _ syscall.RawConn) error { return nil }
