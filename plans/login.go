package plans

import (
	"fmt"
	"net/url"
	"strings"
)

// Credentials the way users give them: in the broker's URL
// (mqtt://user:pass@host, percent-decoded) and, through LoadOptions.Login,
// from the command line and the environment. Each applies to the groups
// that do not set their own username or password:
//
//	a group's own username: / password:  (the plan's, per group)
//	LoadOptions.Login                   (mqplan's flags, then its environment)
//	the user information of broker.url  (the plan's, or --broker's)
//
// The user name and the password are taken separately, each from the
// first of those that gives it, so that a user name in the URL goes with
// a password from a file. The URL is written out without them: reports,
// errors and the JSON result show where clients connect, never as whom.

// Login is a user name and password for every group that gives none of
// its own. The zero Login gives none.
type Login struct {
	// Username and HasUsername: a user name, which may be empty.
	Username    string
	HasUsername bool
	// Password and HasPassword: a password, which may be empty.
	Password    Secret
	HasPassword bool
}

// Or fills what l does not give from other: l's user name and password
// win, each on its own.
func (l Login) Or(other Login) Login {
	if !l.HasUsername {
		l.Username, l.HasUsername = other.Username, other.HasUsername
	}
	if !l.HasPassword {
		l.Password, l.HasPassword = other.Password, other.HasPassword
	}
	return l
}

// SplitLogin takes the user information out of a broker URL: the URL
// without it, and the Login it gave (percent-decoded). A URL that does
// not parse is returned as is, for the loader to word its problem
// (redacted).
func SplitLogin(raw string) (string, Login) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.User == nil || u.Opaque != "" {
		return raw, Login{}
	}
	var l Login
	l.Username, l.HasUsername = u.User.Username(), true
	if pw, ok := u.User.Password(); ok {
		l.Password, l.HasPassword = Secret(pw), true
	}
	u.User = nil
	return u.String(), l
}

// urlLogin records the login of one of the plan's broker URLs; the URLs
// of a cluster must agree, since a group's clients spread over them.
func (l *loader) urlLogin(e keyEntry, login Login) {
	if !login.HasUsername && !login.HasPassword {
		return
	}
	if l.urlSeen && l.urlCreds != login {
		l.errorf(e.val, e.path, "gives other credentials than an earlier URL: the clients of a group spread over every URL, so give one user name and password (in every URL, or with --username and --password-file)")
		return
	}
	l.urlSeen, l.urlCreds = true, login
}

// applyLogin gives g the login of the command line or environment, else
// of the broker URL, for what g does not set itself (hasUser, hasPass).
func (l *loader) applyLogin(g *Group, hasUser, hasPass bool) {
	login := l.login.Or(l.urlCreds)
	if !hasUser && login.HasUsername {
		t, err := ParseTemplate(strings.ReplaceAll(login.Username, "%", "%%"), "")
		if err != nil {
			// Unreachable: every % is doubled.
			l.errorf(nil, "", "%v", fmt.Errorf("the user name: %w", err))
			return
		}
		g.Username, g.LoginUser = t, true
	}
	if !hasPass && login.HasPassword {
		g.Password = login.Password
	}
}
