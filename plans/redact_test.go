package plans

import "testing"

func TestRedactURL(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"no credentials", "mqtt://h:1883", "mqtt://h:1883"},
		{"user and password", "mqtt://bob:secret@h:1883", "mqtt://bob:***@h:1883"},
		{"a user name alone is hidden (a token, for some services)", "mqtt://TOKEN@h", "mqtt://***@h"},
		{"empty password", "mqtt://bob:@h", "mqtt://bob:***@h"},
		{"a password with @ and :", "mqtt://bob:se:c@r@et@h/x", "mqtt://bob:***@h/x"},
		{"a path after the host, its query hidden", "ws://bob:secret@h:8083/mqtt?x=1", "ws://bob:***@h:8083/mqtt?x=***"},
		{"a token in the query", "ws://h:8083/mqtt?access_token=TokSecret123&v=2#top", "ws://h:8083/mqtt?access_token=***&v=***#top"},
		{"a query key without a value stays", "ws://h/mqtt?debug&x=", "ws://h/mqtt?debug&x="},
		{"a query in a sentence", `"ws://h/mqtt?t=abc" is refused`, `"ws://h/mqtt?t=***" is refused`},
		{"no // after the scheme", "mqtt:alice:SECRETX@127.0.0.1", "mqtt:***@127.0.0.1"},
		{"no // in a sentence", `broker.url: "mqtt:alice:SECRETX@127.0.0.1" is not a broker URL`, `broker.url: "mqtt:***@127.0.0.1" is not a broker URL`},
		{"a broken URL", "mqtt://bob:secret@h/%zz", "mqtt://bob:***@h/%zz"},
		{"several in a flow list", "[mqtt://a:one@h,mqtt://b:two@k]", "[mqtt://a:***@h,mqtt://b:***@k]"},
		{"in a sentence", `"foo://bob:secret@h" has the unknown scheme`, `"foo://bob:***@h" has the unknown scheme`},
		{"an @ in the path is not credentials", "ws://h:8083/a:b@c", "ws://h:8083/a:b@c"},
		{"a word like a scheme: hidden too", "bob:secret@h", "bob:***@h"},
		{"no @: left alone", "a:b c:d", "a:b c:d"},
		{"an e-mail address stays", "mail bob@example.com", "mail bob@example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RedactURL(tt.in); got != tt.want {
				t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestRedactEndpoint: an endpoint's whole user information is hidden, the
// user name too, and a URL broken by a password holding #, /, ? or a
// space shows nothing of what precedes its last @.
func TestRedactEndpoint(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"no credentials", "http://127.0.0.1:9090/metrics", "http://127.0.0.1:9090/metrics"},
		{"user and password", "http://zorkuser:pw@127.0.0.1/m", "http://***@127.0.0.1/m"},
		{"a user alone", "https://zorkuser@h/m?token=abc", "https://***@h/m?token=***"},
		{"# in the password", "http://u:pa#ss@127.0.0.1/m", "http://***@127.0.0.1/m"},
		{"/ in the password", "http://u:pa/ss@127.0.0.1/m", "http://***@127.0.0.1/m"},
		{"? in the password", "http://u:pa?ss@127.0.0.1/m", "http://***@127.0.0.1/m"},
		{"a space in the password", "http://u:pa ss@127.0.0.1/m", "http://***@127.0.0.1/m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RedactEndpoint(tt.in); got != tt.want {
				t.Errorf("RedactEndpoint(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
