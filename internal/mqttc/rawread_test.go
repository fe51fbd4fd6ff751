package mqttc

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// chunkReader hands out data a few bytes at a time, answering
// errWouldBlock between chunks, as the socket does to the raw read loop
// when a packet arrives in pieces.
type chunkReader struct {
	data   []byte
	sizes  []byte // chunk sizes, cycled (0 reads as 1)
	i      int
	blocks int // errWouldBlock answers given
	block  bool
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	if r.block = !r.block; r.block {
		r.blocks++
		return 0, errWouldBlock
	}
	n := 1
	if len(r.sizes) > 0 {
		n = max(1, int(r.sizes[r.i%len(r.sizes)]))
		r.i++
	}
	n = min(n, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// packetsOf reads every packet readPacket finds in c until an error other
// than errWouldBlock: each as its first byte and body, and the error.
func packetsOf(c *Conn) (pks [][]byte, err error) {
	for {
		b0, body, err := c.readPacket()
		if errors.Is(err, errWouldBlock) {
			continue
		}
		if err != nil {
			return pks, err
		}
		pks = append(pks, append([]byte{b0}, body...))
	}
}

// readResumes checks that readPacket finds the same packets in data, and
// ends with the same error, whether data comes at once or in pieces with
// errWouldBlock between them (the raw read loop, rawread.go).
func readResumes(t *testing.T, data, sizes []byte) {
	whole := &Conn{br: bufio.NewReaderSize(bytes.NewReader(data), readBufferSize)}
	want, wantErr := packetsOf(whole)
	cr := &chunkReader{data: data, sizes: sizes}
	pieces := &Conn{br: bufio.NewReaderSize(cr, readBufferSize)}
	got, gotErr := packetsOf(pieces)
	if len(got) != len(want) {
		t.Fatalf("%d packets read in pieces, %d at once", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("packet %d: % x in pieces, % x at once", i, got[i][:min(16, len(got[i]))], want[i][:min(16, len(want[i]))])
		}
	}
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Errorf("ended with %v in pieces, %v at once", gotErr, wantErr)
	}
}

// TestReadPacketResumes: packets that fit the read buffer and one that
// does not (read into rbuf), cut into pieces of 1, 3 and 700 bytes.
func TestReadPacketResumes(t *testing.T) {
	var stream []byte
	stream = appendPublish(stream, Version5, "a/b", 0, false, false, 0, bytes.Repeat([]byte{1}, 1000))
	stream = append(stream, TypePingresp<<4, 0)
	stream = appendPublish(stream, Version5, "big", 1, false, false, 7, bytes.Repeat([]byte{2}, 20000))
	stream = appendAck(stream, TypePuback, 9)
	stream = appendPublish(stream, Version311, "c", 2, false, false, 8, []byte("tail"))
	for _, sizes := range [][]byte{{1}, {3}, {200, 250}, {255, 7}} {
		readResumes(t, stream, sizes)
	}
	// A stream cut in the middle of a packet ends the same way.
	readResumes(t, stream[:len(stream)-3], []byte{5})
	readResumes(t, stream[:1500], []byte{1})
}

// FuzzReadPacketResumes: whatever the bytes and however they are cut, the
// raw read loop's resumable reads find what a blocking read finds.
func FuzzReadPacketResumes(f *testing.F) {
	f.Add([]byte{0x30, 0x05, 0x00, 0x01, 'a', 0x00, 'x'}, []byte{1})
	f.Add([]byte{0x32, 0x06, 0x00, 0x01, 'a', 0x00, 0x01, 0x00, 0xd0, 0x00}, []byte{2, 3})
	f.Add([]byte{0x30, 0xff, 0xff, 0xff, 0xff}, []byte{1})
	f.Add([]byte{0x30, 0x80, 0x80, 0x01}, []byte{1})
	f.Fuzz(func(t *testing.T, data, sizes []byte) {
		readResumes(t, data, sizes)
	})
}
