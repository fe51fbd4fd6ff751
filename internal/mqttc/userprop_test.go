package mqttc

import "testing"

// TestUserPropertyFound: the header user property is found among other
// properties a broker may add, and a malformed list is refused.
func TestUserPropertyFound(t *testing.T) {
	props := []byte{0x01, 1, 0x02, 0, 0, 0, 9}
	props = AppendUserProperty(props, "other", []byte("x"))
	props = AppendUserProperty(props, "mqplan", []byte("value"))
	tests := []struct {
		name  string
		props []byte
		want  string
		ok    bool
	}{
		{"after other properties", props, "value", true},
		{"absent", props[:7], "", false},
		{"truncated", props[:len(props)-2], "", false},
		{"unknown property id", []byte{0x7f, 0}, "", false},
		{"empty", nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, ok := UserProperty(tt.props, "mqplan")
			if ok != tt.ok || string(v) != tt.want {
				t.Errorf("got %q %v, want %q %v", v, ok, tt.want, tt.ok)
			}
		})
	}
}
