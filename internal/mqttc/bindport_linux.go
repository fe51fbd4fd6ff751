package mqttc

import "syscall"

// ipBindAddressNoPort is Linux's IP_BIND_ADDRESS_NO_PORT (4.2 and later;
// package syscall does not name it).
const ipBindAddressNoPort = 24

// bindNoPort is the Control of a dial from a source address: it defers
// the choice of the local port from bind to connect. Bound first, a
// socket takes a port no other socket of that address holds, TIME_WAIT
// ones included, so one address gives about 28k connections in all and a
// run right after another finds the ports of its predecessor's closed
// connections still taken (connects stall there). Chosen at connect, the
// port need only be unique per destination, as for a dial with no source
// address. A kernel without the option dials as before.
func bindNoPort(_, _ string, c syscall.RawConn) error {
	return c.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, ipBindAddressNoPort, 1)
	})
}
