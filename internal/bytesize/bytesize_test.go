package bytesize

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int64
		bad  bool
	}{
		{name: "plain bytes", in: "1024", want: 1024},
		{name: "B", in: "512B", want: 512},
		{name: "space and lower case", in: "512 b", want: 512},
		{name: "KB is 1000", in: "1KB", want: 1000},
		{name: "KiB is 1024", in: "1KiB", want: 1024},
		{name: "any case", in: "1kIb", want: 1024},
		{name: "MB", in: "1.5MB", want: 1_500_000},
		{name: "MiB", in: "1.5MiB", want: 3 << 19},
		{name: "GB", in: "2GB", want: 2_000_000_000},
		{name: "GiB", in: "2GiB", want: 2 << 30},
		{name: "underscores", in: "1_048_576", want: 1 << 20},
		{name: "largest GiB", in: "8589934591GiB", want: 8589934591 << 30},
		{name: "largest GiB with its last bytes", in: "8589934591.999999999GiB", bad: true}, // not whole
		{name: "largest GiB and a half", in: "8589934591.5GiB", want: 8589934591<<30 + 1<<29},
		{name: "one GiB more", in: "8589934592GiB", bad: true},
		{name: "not a whole number of bytes", in: "1.0001KB", bad: true},
		{name: "negative", in: "-1KB", bad: true},
		{name: "unknown unit", in: "1K", bad: true},
		{name: "exponent", in: "1e3", bad: true},
		{name: "empty", in: "", bad: true},
		{name: "too large", in: "9999999999GiB", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if tc.bad {
				if err == nil {
					t.Errorf("Parse(%q) = %d, want an error", tc.in, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Parse(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
	if _, err := Parse("-5"); !errors.Is(err, ErrNegative) {
		t.Errorf("Parse(-5) = %v, want ErrNegative", err)
	}
}

func TestIsUnit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{{"B", true}, {"kb", true}, {"GiB", true}, {"MIB", true}, {"", false}, {"K", false}, {"ms", false}, {"gibx", false}} {
		if got := IsUnit(tc.in); got != tc.want {
			t.Errorf("IsUnit(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
