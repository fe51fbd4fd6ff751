package runner

import "testing"

func TestPayloadRoundTrip(t *testing.T) {
	pattern := padPattern(4096)
	tests := []struct {
		name     string
		size     int
		pub, seq uint32
		at       int64
	}{
		{"header only", 16, 0, 1, 0},
		{"small", 64, 7, 42, 123456789},
		{"1KB", 1000, 99, 1 << 30, -5},
		{"4KB", 4096, 1 << 31, 7, 1 << 60},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := make([]byte, tt.size)
			encodePayload(buf, pattern, tt.pub, tt.seq, tt.at)
			h, ok := decodeHeader(buf)
			if !ok || h.pub != tt.pub || h.seq != tt.seq || h.intended != tt.at {
				t.Fatalf("decoded %+v ok=%v", h, ok)
			}
			if !paddingOK(buf, pattern, h, tt.size) {
				t.Fatal("padding check failed on an intact payload")
			}
			if tt.size > 16 {
				buf[tt.size-1] ^= 1
				if paddingOK(buf, pattern, h, tt.size) {
					t.Fatal("padding check passed a flipped bit")
				}
				buf[tt.size-1] ^= 1
				// The same bytes under another sequence are corrupt too.
				h2 := h
				h2.seq++
				if paddingOK(buf, pattern, h2, tt.size) {
					t.Fatal("padding check passed another sequence's payload")
				}
			}
			if paddingOK(buf[:tt.size-1], pattern, h, tt.size) {
				t.Fatal("padding check passed a truncated payload")
			}
		})
	}
	if _, ok := decodeHeader(make([]byte, 15)); ok {
		t.Fatal("decoded a 15-byte payload")
	}
}
