package brokerurl

import "testing"

// TestLookup pins the table: every accepted scheme, what it stands for,
// its default port and its transport.
func TestLookup(t *testing.T) {
	tests := []struct {
		name string
		want Scheme
		ok   bool
	}{
		{"mqtt", Scheme{"mqtt", "mqtt", "1883", false, false}, true},
		{"tcp alias of mqtt", Scheme{"tcp", "mqtt", "1883", false, false}, true},
		{"mqtts", Scheme{"mqtts", "mqtts", "8883", true, false}, true},
		{"ssl alias of mqtts", Scheme{"ssl", "mqtts", "8883", true, false}, true},
		{"tls alias of mqtts", Scheme{"tls", "mqtts", "8883", true, false}, true},
		{"ws", Scheme{"ws", "ws", "80", false, true}, true},
		{"wss", Scheme{"wss", "wss", "443", true, true}, true},
		{"http is not a broker scheme", Scheme{Name: "http"}, false},
		{"upper case is not looked up (url.Parse lowercases)", Scheme{Name: "MQTT"}, false},
		{"empty", Scheme{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Lookup(tt.want.Name)
			if ok != tt.ok {
				t.Fatalf("Lookup(%q) ok = %v, want %v", tt.want.Name, ok, tt.ok)
			}
			if ok && got != tt.want {
				t.Errorf("Lookup(%q) = %+v, want %+v", tt.want.Name, got, tt.want)
			}
		})
	}
}

// TestCanonicalSchemesAreTheirOwn: every canonical scheme is in the table
// as itself, with the same port and transport as its aliases.
func TestCanonicalSchemesAreTheirOwn(t *testing.T) {
	for _, s := range schemes {
		c, ok := Lookup(s.Canonical)
		if !ok || c.Canonical != c.Name {
			t.Errorf("%s: canonical %q is not a canonical scheme of the table", s.Name, s.Canonical)
			continue
		}
		if c.DefaultPort != s.DefaultPort || c.TLS != s.TLS || c.WebSocket != s.WebSocket {
			t.Errorf("%s: %+v differs from its canonical %+v", s.Name, s, c)
		}
	}
}

// TestNames pins the lists error messages show.
func TestNames(t *testing.T) {
	for _, tt := range []struct {
		name, got, want string
	}{
		{"every scheme", Names(), "mqtt, tcp, mqtts, ssl, tls, ws or wss"},
		{"canonical schemes", CanonicalNames(), "mqtt, mqtts, ws or wss"},
		{"one name", orList([]string{"a"}), "a"},
		{"two names", orList([]string{"a", "b"}), "a or b"},
		{"no name", orList(nil), ""},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

// TestFor checks that every transport has its canonical scheme.
func TestFor(t *testing.T) {
	for _, tc := range []struct {
		tls, ws bool
		want    string
	}{{false, false, "mqtt"}, {true, false, "mqtts"}, {false, true, "ws"}, {true, true, "wss"}} {
		if got := For(tc.tls, tc.ws); got.Name != tc.want || got.TLS != tc.tls || got.WebSocket != tc.ws {
			t.Errorf("For(%v, %v) = %+v, want %s", tc.tls, tc.ws, got, tc.want)
		}
	}
}
