package plans

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLoadLogin checks where each group's login comes from: its own
// username and password first, then LoadOptions.Login (the command line
// and environment), then the broker URL's user information, each of the
// two taken separately; and that the URL is written out without it.
func TestLoadLogin(t *testing.T) {
	const groups = "groups:\n  - {name: own, username: me, password: mine, publish: {topic: t, every: 1s}}\n" +
		"  - {name: shared, subscribe: t}\n  - {name: userless, password: \"\", subscribe: u}\nduration: 1s\n"
	tests := []struct {
		name, broker string
		opts         Login
		// want are the shared group's user name and password, and the
		// URL the plan keeps.
		user, pass, url string
	}{
		{name: "in the URL, percent-decoded", broker: "url: \"mqtt://al%40ice:p%2Fw%20d%25@h:1884\"", user: "al@ice", pass: "p/w d%", url: "mqtt://h:1884"},
		{name: "a user alone in the URL", broker: "url: mqtt://token@h", user: "token", url: "mqtt://h:1883"},
		{name: "the options before the URL", broker: "url: mqtt://al:pw@h", opts: Login{Username: "bob", HasUsername: true, Password: "flag", HasPassword: true}, user: "bob", pass: "flag", url: "mqtt://h:1883"},
		{name: "each part from the first that gives it", broker: "url: mqtt://al:pw@h", opts: Login{Password: "flag", HasPassword: true}, user: "al", pass: "flag", url: "mqtt://h:1883"},
		{name: "a cluster's URLs that agree", broker: "urls: [mqtt://al:pw@h1, mqtt://h2, \"mqtt://al:pw@h3\"]", user: "al", pass: "pw", url: "mqtt://h1:1883"},
		{name: "the options alone", opts: Login{Username: "a%i", HasUsername: true}, user: "a%i", url: "embedded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "name: t\n"
			if tt.broker != "" {
				src += "broker:\n  " + tt.broker + "\n"
			}
			p, err := LoadBytes("p.yaml", []byte(src+groups), LoadOptions{Login: tt.opts})
			if err != nil {
				t.Fatal(err)
			}
			own, shared, userless := p.Groups[0], p.Groups[1], p.Groups[2]
			if own.Username.Expand(TemplateVars{}) != "me" || own.Password.Reveal() != "mine" || own.LoginUser {
				t.Errorf("the group's own login was replaced: %q %q", own.Username, own.Password.Reveal())
			}
			if got := shared.Username.Expand(TemplateVars{N: 1}); got != tt.user || shared.Password.Reveal() != tt.pass || !shared.LoginUser {
				t.Errorf("shared group: user %q password %q (login user %v), want %q %q", got, shared.Password.Reveal(), shared.LoginUser, tt.user, tt.pass)
			}
			if userless.Password.Reveal() != "" {
				t.Errorf("a group's own empty password was replaced")
			}
			if p.Broker.URLs[0] != tt.url {
				t.Errorf("URL %q, want %q", p.Broker.URLs[0], tt.url)
			}
			b, _ := json.Marshal(p)
			if tt.pass != "" && strings.Contains(string(b), tt.pass) {
				t.Errorf("the plan's JSON holds the password: %s", b)
			}
		})
	}
}
