package plans

import "testing"

func TestRedactURL(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"no credentials", "mqtt://h:1883", "mqtt://h:1883"},
		{"user and password", "mqtt://bob:secret@h:1883", "mqtt://bob:***@h:1883"},
		{"user only stays", "mqtt://bob@h", "mqtt://bob@h"},
		{"empty password", "mqtt://bob:@h", "mqtt://bob:***@h"},
		{"a password with @ and :", "mqtt://bob:se:c@r@et@h/x", "mqtt://bob:***@h/x"},
		{"a path after the host", "ws://bob:secret@h:8083/mqtt?x=1", "ws://bob:***@h:8083/mqtt?x=1"},
		{"a broken URL", "mqtt://bob:secret@h/%zz", "mqtt://bob:***@h/%zz"},
		{"several in a flow list", "[mqtt://a:one@h,mqtt://b:two@k]", "[mqtt://a:***@h,mqtt://b:***@k]"},
		{"in a sentence", `"foo://bob:secret@h" has the unknown scheme`, `"foo://bob:***@h" has the unknown scheme`},
		{"an @ in the path is not credentials", "ws://h:8083/a:b@c", "ws://h:8083/a:b@c"},
		{"no scheme: left alone", "bob:secret@h", "bob:secret@h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RedactURL(tt.in); got != tt.want {
				t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
