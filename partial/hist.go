package partial

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mqplan/mqplan/stats"
)

// encodeHist is h in the standard HdrHistogram V2 compressed encoding,
// base64 (what other HdrHistogram tools read); "" for nil or empty.
func encodeHist(h *hdrhistogram.Histogram) (string, error) {
	if h == nil || h.TotalCount() == 0 {
		return "", nil
	}
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("encode histogram: %w", err)
	}
	return string(b), nil
}

// maxHistBytes bounds one encoded histogram. A histogram of mqplan's
// bounds holds about 24k counts, at most 9 bytes each compressed to far
// less: a full one is a few tens of KiB in base64.
const maxHistBytes = 1 << 20

// decodeHist reads an encoded histogram, refusing any other geometry than
// stats.NewHistogram's before the library allocates its counts (a forged
// header of 1..MaxInt64 at 5 digits would make it allocate gigabytes), so
// that every histogram of a merge adds bucket by bucket.
func decodeHist(s string) (*hdrhistogram.Histogram, error) {
	if s == "" {
		return nil, nil
	}
	if len(s) > maxHistBytes {
		return nil, fmt.Errorf("histogram of %d bytes: at most %d", len(s), maxHistBytes)
	}
	if err := checkGeometry(s); err != nil {
		return nil, err
	}
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("histogram: %w", err)
	}
	return h, nil
}

// checkGeometry reads the header of an encoded histogram (the V2
// compressed layout: cookie and length, then zlib of cookie, payload
// length, normalizing offset, significant digits, lowest, highest and
// ratio) and insists on mqplan's bounds.
func checkGeometry(s string) error {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	if len(raw) < 8 {
		return fmt.Errorf("histogram: %d bytes, too short", len(raw))
	}
	z, err := inflater(bytes.NewReader(raw[8:]))
	if err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	defer inflaters.Put(z)
	var hdr struct {
		Cookie, PayloadLen, Offset, Digits int32
		Lowest, Highest                    int64
	}
	if err := binary.Read(io.LimitReader(z, 32), binary.BigEndian, &hdr); err != nil {
		return fmt.Errorf("histogram header: %w", err)
	}
	if hdr.Lowest != geometry[0] || hdr.Highest != geometry[1] || int64(hdr.Digits) != geometry[2] {
		return fmt.Errorf("histogram of range %d..%d at %d digits: mqplan's are %d..%d at %d",
			hdr.Lowest, hdr.Highest, hdr.Digits, geometry[0], geometry[1], geometry[2])
	}
	return nil
}

// inflaters keeps zlib readers for checkGeometry to reuse: a merge reads
// a header per histogram and second, and a new reader's buffers cost
// more than reading the header.
var inflaters sync.Pool

// inflater is a zlib reader of r, reused when one is free.
func inflater(r io.Reader) (io.ReadCloser, error) {
	if z, ok := inflaters.Get().(io.ReadCloser); ok {
		if err := z.(zlib.Resetter).Reset(r, nil); err != nil {
			return nil, err
		}
		return z, nil
	}
	return zlib.NewReader(r)
}

// geometry is stats.NewHistogram's lowest and highest trackable values
// and significant digits, as its encoding states them.
var geometry = func() [3]int64 {
	h := stats.NewHistogram()
	return [3]int64{h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures()}
}()
