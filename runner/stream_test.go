package runner

import "testing"

func TestStreamObserve(t *testing.T) {
	tests := []struct {
		name string
		seqs []uint32
		want []delivery
	}{
		{"in order", []uint32{1, 2, 3}, []delivery{deliveryFirst, deliveryFirst, deliveryFirst}},
		{"gap then fill", []uint32{1, 3, 2}, []delivery{deliveryFirst, deliveryFirst, deliveryOutOfOrder}},
		{"repeat of highest", []uint32{1, 2, 2}, []delivery{deliveryFirst, deliveryFirst, deliveryDuplicate}},
		{"repeat of an older one", []uint32{1, 2, 3, 1}, []delivery{deliveryFirst, deliveryFirst, deliveryFirst, deliveryDuplicate}},
		{"late then repeated", []uint32{2, 1, 1}, []delivery{deliveryFirst, deliveryOutOfOrder, deliveryDuplicate}},
		{"first message lost", []uint32{2, 3}, []delivery{deliveryFirst, deliveryFirst}},
		{"jump over a word boundary", []uint32{1, 70, 1, 69, 2}, []delivery{deliveryFirst, deliveryFirst, deliveryDuplicate, deliveryOutOfOrder, deliveryOutOfOrder}},
		{"jump exactly the window", []uint32{1, 257, 1, 256}, []delivery{deliveryFirst, deliveryFirst, deliveryDuplicate, deliveryOutOfOrder}},
		{"beyond the window counts as out of order", []uint32{1, 400, 1}, []delivery{deliveryFirst, deliveryFirst, deliveryOutOfOrder}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s stream
			for i, seq := range tt.seqs {
				if got := s.observe(seq); got != tt.want[i] {
					t.Fatalf("delivery %d (seq %d) = %d, want %d", i, seq, got, tt.want[i])
				}
			}
		})
	}
}

// TestStreamAgainstSet replays a long pseudo-random delivery pattern with
// reordering within the window and checks every classification against a
// plain set of seen sequences.
func TestStreamAgainstSet(t *testing.T) {
	var s stream
	seen := map[uint32]bool{}
	highest := uint32(0)
	x := uint32(12345)
	for i := 0; i < 20000; i++ {
		x = x*1664525 + 1013904223
		seq := uint32(i/2) + 1 + (x>>24)%100 // within 100 of the moving front
		if seq > 200 && (x>>8)%3 == 0 {
			seq -= (x >> 12) % 200 // some late ones, some repeats
		}
		got := s.observe(seq)
		var want delivery
		switch {
		case seen[seq]:
			want = deliveryDuplicate
		case seq < highest:
			want = deliveryOutOfOrder
		default:
			want = deliveryFirst
		}
		if highest >= streamWindow && seq < highest-streamWindow && !seen[seq] {
			want = deliveryOutOfOrder
		}
		if highest > streamWindow && seq < highest-streamWindow {
			// Beyond the window a repeat cannot be told from a late first.
			if got != deliveryOutOfOrder {
				t.Fatalf("step %d seq %d beyond the window: got %d", i, seq, got)
			}
		} else if got != want {
			t.Fatalf("step %d seq %d (highest %d): got %d, want %d", i, seq, highest, got, want)
		}
		seen[seq] = true
		highest = max(highest, seq)
	}
}
