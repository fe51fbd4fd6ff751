package coord

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"testing"
)

// FuzzDecode: whatever a peer sends, a frame is read or refused, never a
// panic, and a frame read re-encodes to one that reads the same.
func FuzzDecode(f *testing.F) {
	for _, fr := range []frame{
		{Type: tHello, Hello: &Hello{Shard: 1, N: 2, RunID: "r", PlanSHA256: "p", AssignSHA256: "a", Version: "v", Protocol: Protocol}},
		{Type: tReady, Name: "connect 0", Vals: []int64{1, 2}, At: 5},
		{Type: tPong, T0: 1, T1: 2, T2: 3},
		{Type: tPartial, Data: json.RawMessage(`{"mqplan_partial":1}`)},
	} {
		f.Add(encode(f, &fr))
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := decode(bytes.NewReader(data), nil, false, nil)
		if err != nil {
			return
		}
		again, err := decode(bytes.NewReader(encode(t, fr)), nil, false, nil)
		if err != nil {
			t.Fatalf("a frame read does not read again: %v", err)
		}
		a, _ := json.Marshal(fr)
		b, _ := json.Marshal(again)
		if !bytes.Equal(a, b) {
			t.Fatalf("read %s, then %s", a, b)
		}
	})
}

func encode(t testing.TB, fr *frame) []byte {
	body, err := json.Marshal(fr)
	if err != nil {
		t.Fatal(err)
	}
	out := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(out, body...)
}

// FuzzSealedFrame: whatever a peer sends on an authenticated connection,
// a frame is refused or read, never a panic, and only the exact bytes of
// a frame sealed under the session key are read: no mutation of a genuine
// frame (a flipped bit, a cut, a changed length or sealed bit) passes its
// MAC.
func FuzzSealedFrame(f *testing.F) {
	key := sessionKey([]byte("fuzz secret, long enough for it"), make([]byte, nonceSize), make([]byte, nonceSize))
	var genuine [][]byte
	for _, fr := range []frame{
		{Type: tReady, Name: "connect 0", Vals: []int64{1, 2}, At: 5},
		{Type: tPartial, Data: json.RawMessage(`{"mqplan_partial":1}`)},
		{Type: tBeat},
	} {
		body, err := json.Marshal(&fr)
		if err != nil {
			f.Fatal(err)
		}
		var b []byte
		if _, err := appendFrame(nil, newSealer(key, dirToCoordinator), body).WriteTo(&writer{&b}); err != nil {
			f.Fatal(err)
		}
		genuine = append(genuine, b)
		f.Add(b)
	}
	f.Add(encode(f, &frame{Type: tRefuse, Error: "x"}))
	f.Add([]byte{0x80, 0, 0, 2, '{', '}'})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, plain := range []bool{false, true} {
			r := bytes.NewReader(data)
			fr, err := decode(r, newSealer(key, dirToCoordinator), plain, nil)
			if err != nil {
				continue
			}
			read := data[:len(data)-r.Len()]
			if binary.BigEndian.Uint32(read)&sealedBit == 0 {
				if !plain || fr.Type != tRefuse {
					t.Fatalf("an unsealed %s frame read on a sealed connection", fr.Type)
				}
				continue
			}
			found := false
			for _, g := range genuine {
				found = found || bytes.Equal(read, g)
			}
			if !found {
				t.Fatalf("forged frame accepted: %q", read)
			}
		}
	})
}
