//go:build !unix

package mqttc

// Where a socket is not a file descriptor syscall.Read takes (Windows: a
// Handle, read through overlapped I/O), every connection is read by
// readLoop through net.Conn, and sockReader's fd stays -1.

// readFD is never reached (fd is always -1 here): it reads through the
// connection, as sockReader does outside the raw read loop.
func (s *sockReader) readFD(p []byte) (int, error) { return s.nc.Read(p) }

// startReader starts readLoop, the portable reader.
func (c *Conn) startReader() { go c.readLoop() }
