package partial

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

var (
	partSecret  = []byte("a run's secret of 32 characters!")
	otherSecret = []byte("another secret, also long enough")
)

func signedPart(t testing.TB, secret []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	p := part(&testing.T{}, shardStats(10, 8, []int64{100, 900}), 0, 1, []int64{100, 900})
	if err := WriteSigned(&b, p, secret); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestSignedPart: a signed part reads as the same File, its signature
// holds under its secret, and every tampering is told apart: unsigned,
// altered (a byte flipped anywhere, the MAC stripped or moved, the file
// re-indented), or signed with another secret.
func TestSignedPart(t *testing.T) {
	signed := signedPart(t, partSecret)
	var plain bytes.Buffer
	p := part(t, shardStats(10, 8, []int64{100, 900}), 0, 1, []int64{100, 900})
	if err := Write(&plain, p); err != nil {
		t.Fatal(err)
	}
	if f, err := Parse("signed.json", signed); err != nil || f.MAC == "" || f.RunID != p.RunID {
		t.Fatalf("a signed part does not read: %v", err)
	}
	if !bytes.HasPrefix(signed, plain.Bytes()[:plain.Len()-len(docClosing)]) {
		t.Fatalf("the signed part is not the unsigned document with a last member")
	}
	flipAt := func(i int) []byte {
		b := slices.Clone(signed)
		b[i] ^= 1
		return b
	}
	for _, tc := range []struct {
		name   string
		data   []byte
		secret []byte
		want   string // "" holds
	}{
		{"genuine", signed, partSecret, ""},
		{"unsigned", plain.Bytes(), partSecret, Unsigned},
		{"a byte flipped at the start", flipAt(0), partSecret, Altered},
		{"a byte flipped in the middle", flipAt(len(signed) / 2), partSecret, Altered},
		{"a byte of the MAC flipped", flipAt(len(signed) - len(macClosing) - 1), partSecret, Altered},
		{"the MAC stripped", append(slices.Clone(signed[:bytes.LastIndex(signed, []byte(macMember))]), docClosing...), partSecret, Unsigned},
		{"the MAC moved up", bytes.Replace(plain.Bytes(), []byte("{\n"), []byte("{\n \"mqplan_mac\": \"x\",\n"), 1), partSecret, Altered},
		{"re-indented", bytes.ReplaceAll(signed, []byte("\n "), []byte("\n  ")), partSecret, Altered},
		{"signed with another secret", signedPart(t, otherSecret), partSecret, OtherSecret},
		{"checked with another secret", signed, otherSecret, OtherSecret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify("p.json", tc.data, tc.secret)
			var se *SignatureError
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("%v, want it to hold", err)
			case tc.want != "" && (!errors.As(err, &se) || se.Kind != tc.want):
				t.Fatalf("%v, want %s", err, tc.want)
			}
			if err != nil && (bytes.Contains([]byte(err.Error()), partSecret) || bytes.Contains([]byte(err.Error()), otherSecret)) {
				t.Errorf("the error shows a secret: %v", err)
			}
		})
	}
}

// TestHoldBack: the signing writer passes on every byte but the closing
// whatever the chunks it is written in.
func TestHoldBack(t *testing.T) {
	doc := []byte("{\n \"a\": 1\n}\n")
	for _, size := range []int{1, 2, 3, 4, 5, len(doc)} {
		var out bytes.Buffer
		h := &holdBack{w: &out, m: partMAC(nil)}
		for b := doc; len(b) > 0; {
			n := min(size, len(b))
			if _, err := h.Write(b[:n]); err != nil {
				t.Fatal(err)
			}
			b = b[n:]
		}
		if out.String() != string(doc[:len(doc)-3]) || string(h.tail[:h.n]) != docClosing {
			t.Errorf("chunks of %d: passed %q, held %q", size, out.String(), h.tail[:h.n])
		}
	}
}

// FuzzVerify: whatever a part file holds, Verify says whether its
// signature holds, never a panic, and holds only for the exact bytes
// signed.
func FuzzVerify(f *testing.F) {
	signed := signedPart(f, partSecret)
	f.Add(signed)
	f.Add(signedPart(f, otherSecret))
	f.Add([]byte(`{"mqplan_partial":1,` + macMember[1:] + `hmac-sha256:0123456789abcdef:` + string(bytes.Repeat([]byte("0"), 64)) + macClosing))
	f.Fuzz(func(t *testing.T, data []byte) {
		if Verify("fuzz.json", data, partSecret) == nil && !bytes.Equal(data, signed) {
			t.Fatalf("a forged part verifies: %q", data)
		}
	})
}
