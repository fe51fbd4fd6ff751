package plans

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/golden"
)

// TestPayloadTemplateRender renders each template for a sample client
// and its first messages into one golden file: the placeholders' output,
// formats and random draws are pinned, so a change to the generator (which
// would make receivers of another build disagree) shows in review.
func TestPayloadTemplateRender(t *testing.T) {
	tests := []struct{ name, tmpl string }{
		{"literal only", `{"ok":true}`},
		{"client values", `%c/%u/%i 100%%`},
		{"sequence and times", `{"seq":%s,"ms":%t,"at":"%T"}`},
		{"header field", `{"h":"%h","n":%s}`},
		{"ints", `%{int:-5:5} %{int:0:0} %{int:-1000000000000000:1000000000000000}`},
		{"floats", `%{float:-1:1:3} %{float:20:30:0} %{float:0.5:0.5:1} %{float:-0.09:0:2}`},
		{"choices", `%{choice:on|off|unknown} [%{choice:}] %{choice:a||b}`},
		{"hex ids", `%{hex:1} %{hex:16} %{hex:17} %{hex:64}`},
		{"newline kept", "line 1\nline %s"},
	}
	v := TemplateVars{ClientID: "dev-7", Username: "alice", N: 7}
	var b strings.Builder
	for _, tt := range tests {
		tp, err := ParsePayloadTemplate(tt.tmpl)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		fmt.Fprintf(&b, "== %s: %s (max %d bytes)\n", tt.name, tt.tmpl, tp.MaxLen(v))
		for seq := uint32(1); seq <= 3; seq++ {
			k := PayloadKey{Seed: 42, Pub: 3, Seq: seq, Intended: time.Date(2026, 11, 30, 19, 0, 0, int(seq)*1_500_000, time.UTC).UnixNano()}
			out := tp.AppendRender(nil, v, k)
			if len(out) > tp.MaxLen(v) {
				t.Errorf("%s: message %d renders %d bytes, more than MaxLen %d", tt.name, seq, len(out), tp.MaxLen(v))
			}
			fmt.Fprintf(&b, "%d: %s\n", seq, out)
		}
	}
	golden.Check(t, filepath.Join("..", "testdata", "golden", "payload", "render.txt"), []byte(b.String()))
}

// TestPayloadTemplateErrors: each malformed placeholder is refused with a
// message naming it and its offset.
func TestPayloadTemplateErrors(t *testing.T) {
	tests := []struct{ name, tmpl, want string }{
		{"lone percent", `50%`, "ends with a lone % at offset 2"},
		{"unknown verb", `%x`, "unknown placeholder %x at offset 0"},
		{"unclosed brace", `a %{int:1:2`, "%{ at offset 2 has no closing }"},
		{"unknown kind", `%{dice:6}`, `unknown kind "dice"`},
		{"int arity", `%{int:1}`, "write %{int:LO:HI}"},
		{"int reversed", `%{int:2:1}`, "LO must not exceed HI"},
		{"int not whole", `%{int:1.5:2}`, "LO and HI must be whole numbers"},
		{"int too large", `%{int:0:9999999999999999}`, "within ±1e+15"},
		{"float decimals", `%{float:0:1:10}`, "D, the decimals, must be 0 to 9"},
		{"float NaN", `%{float:NaN:1:1}`, "LO and HI must be numbers"},
		{"float too large", `%{float:0:1e14:2}`, "within ±1e+15"},
		{"hex zero", `%{hex:0}`, "N from 1 to 64"},
		{"hex too long", `%{hex:65}`, "N from 1 to 64"},
		{"choice bare", `%{choice}`, "write %{choice:A|B|C}"},
		{"too many choices", "%{choice:" + strings.Repeat("a|", 256) + "a}", "257 choices, at most 256"},
		{"header twice", `%h%h`, "%h appears twice"},
		{"header late", `%s %h`, "only literal text may come before %h"},
		{"too many holes", strings.Repeat("%{int:0:1}", 257), "more than 256 random placeholders"},
		{"too long", strings.Repeat("x", 64<<10+1), "too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePayloadTemplate(tt.tmpl)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestHeaderHexRoundTrip: the header as %h and the user property carry
// it reads back exactly, and anything but 32 lowercase hex digits is
// refused.
func TestHeaderHexRoundTrip(t *testing.T) {
	k := PayloadKey{Pub: 0xdeadbeef, Seq: 7, Intended: -5}
	hx := AppendHeaderHex(nil, k)
	pub, seq, at, ok := ParseHeaderHex(hx)
	if !ok || pub != k.Pub || seq != k.Seq || at != k.Intended {
		t.Fatalf("%s read back as %x %d %d %v", hx, pub, seq, at, ok)
	}
	for _, bad := range []string{"", strings.ToUpper(string(hx)), string(hx[:31]), string(hx) + "0", strings.Replace(string(hx), "d", "g", 1)} {
		if _, _, _, ok := ParseHeaderHex([]byte(bad)); ok {
			t.Errorf("%q read as a header", bad)
		}
	}
}

// TestSizeDist: drawn sizes stay within their bounds, are a pure function
// of the message, and follow their weights.
func TestSizeDist(t *testing.T) {
	tests := []struct {
		name     string
		d        SizeDist
		wantMean float64
	}{
		{"uniform", SizeDist{Min: 100, Max: 200}, 150},
		{"one size", SizeDist{Min: 64, Max: 64}, 64},
		{"weighted", SizeDist{Choices: []SizeChoice{{100, 9}, {10000, 1}}}, 1090},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi, mean := tt.d.Bounds()
			if mean != tt.wantMean {
				t.Errorf("mean %v, want %v", mean, tt.wantMean)
			}
			const n = 20000
			var sum float64
			for seq := uint32(1); seq <= n; seq++ {
				k := PayloadKey{Seed: 1, Pub: 2, Seq: seq}
				s := tt.d.Size(k)
				if s != tt.d.Size(k) {
					t.Fatal("the size of a message changed between calls")
				}
				if s < lo || s > hi {
					t.Fatalf("size %d outside [%d, %d]", s, lo, hi)
				}
				sum += float64(s)
			}
			// The sample mean within 3% of the distribution's (20,000
			// draws: the standard error is under 1% for these).
			if got := sum / n; got < tt.wantMean*0.97 || got > tt.wantMean*1.03 {
				t.Errorf("sample mean %.1f, want about %v", got, tt.wantMean)
			}
		})
	}
}

// FuzzPayloadTemplate: whatever the text, parsing does not panic, and a
// template that parses renders within MaxLen for any message.
func FuzzPayloadTemplate(f *testing.F) {
	for _, s := range []string{`{"h":"%h","v":%{float:-1:1:2}}`, `%c%u%i%s%t%T%%`, `%{choice:a|b}%{hex:20}%{int:-3:3}`, `%{`, `%{int:1:}`, "%", `%{float:0:0:2}`, `%{float:-0.5:0:3}`} {
		f.Add(s, uint32(1), int64(0))
	}
	f.Fuzz(func(t *testing.T, s string, seq uint32, at int64) {
		tp, err := ParsePayloadTemplate(s)
		if err != nil {
			return
		}
		v := TemplateVars{ClientID: "c", Username: "u", N: 12}
		out := tp.AppendRender(nil, v, PayloadKey{Seed: 3, Pub: 1, Seq: seq, Intended: at})
		if len(out) > tp.MaxLen(v) {
			t.Fatalf("%q renders %d bytes, MaxLen %d", s, len(out), tp.MaxLen(v))
		}
		if !tp.Matches(out, v, PayloadKey{Seed: 3, Pub: 1, Seq: seq, Intended: at}) {
			t.Fatalf("%q: its rendering %q does not match itself", s, out)
		}
		if tp.HeaderAt() >= 0 && !strings.HasPrefix(string(out), tp.HeaderPrefix()) {
			t.Fatalf("%q: rendering does not start with the header's prefix %q", s, tp.HeaderPrefix())
		}
	})
}

// TestPayloadTemplateMatches: Matches accepts exactly the rendering of
// the message it is given, and refuses it with any one byte changed,
// one byte more or one less, or for another message or client.
func TestPayloadTemplateMatches(t *testing.T) {
	tp, err := ParsePayloadTemplate(`{"h":"%h","id":"%c","u":"%u","n":%i,"s":%s,"t":%t,"T":"%T","i":%{int:-9:9},"f":%{float:0:1:3},"c":"%{choice:a|bb|}","x":"%{hex:40}"}`)
	if err != nil {
		t.Fatal(err)
	}
	v := TemplateVars{ClientID: "dev-1", Username: "alice", N: 1}
	k := PayloadKey{Seed: 5, Pub: 2, Seq: 9, Intended: 1_800_000_000_123_456_789}
	good := tp.AppendRender(nil, v, k)
	if !tp.Matches(good, v, k) {
		t.Fatalf("its own rendering does not match: %s", good)
	}
	for i := range good {
		bad := append([]byte(nil), good...)
		bad[i] ^= 0x20
		if tp.Matches(bad, v, k) {
			t.Errorf("byte %d changed (%q) still matches", i, bad)
		}
	}
	tests := []struct {
		name    string
		payload []byte
		v       TemplateVars
		k       PayloadKey
	}{
		{"one byte more", append(append([]byte(nil), good...), '}'), v, k},
		{"one byte less", good[:len(good)-1], v, k},
		{"empty", nil, v, k},
		{"another sequence", good, v, PayloadKey{Seed: 5, Pub: 2, Seq: 10, Intended: k.Intended}},
		{"another seed", good, v, PayloadKey{Seed: 6, Pub: 2, Seq: 9, Intended: k.Intended}},
		{"another client", good, TemplateVars{ClientID: "dev-2", Username: "alice", N: 1}, k},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tp.Matches(tt.payload, tt.v, tt.k) {
				t.Errorf("matches")
			}
		})
	}
}
