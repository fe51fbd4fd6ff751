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
		fr, err := decode(bytes.NewReader(data), nil)
		if err != nil {
			return
		}
		again, err := decode(bytes.NewReader(encode(t, fr)), nil)
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
