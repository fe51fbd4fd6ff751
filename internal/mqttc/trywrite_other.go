//go:build !unix

package mqttc

// initTryWrite does nothing where a socket is not a file descriptor that
// syscall.Write takes (Windows: a Handle, written through overlapped I/O):
// rc stays nil, so TryWrites is false and TryPublishProps blocks as
// PublishProps does, as on a TLS connection.
func (c *Conn) initTryWrite() {}
