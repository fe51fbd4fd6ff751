package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mqplan/mqplan/plans"
)

// The broker login of a run, for every group that sets none of its own
// (see plans.Login): from the command line, then the environment, then
// the plan's broker URL. A password is never taken on the command line,
// where every user of the machine sees it (ps), except inside --broker's
// URL, as other MQTT tools take it:
//
//   - --username NAME, --password-file FILE;
//   - the user information of --broker mqtt://USER:PASSWORD@HOST;
//   - the environment variables MQPLAN_USERNAME and MQPLAN_PASSWORD.
//
// The user name and the password are taken each from the first that
// gives it.
const (
	envUsername = "MQPLAN_USERNAME"
	envPassword = "MQPLAN_PASSWORD"
	// maxPasswordFile bounds --password-file: a password is a line, and a
	// wrong file (a log, a key store) is refused before it is read whole.
	maxPasswordFile = 4096
)

// loginFlags are --username and --password-file.
type loginFlags struct {
	username     optString
	passwordFile string
}

func (lf *loginFlags) register(fs *flag.FlagSet) {
	fs.Var(&lf.username, "username", "the user `NAME` for every group that sets none; wins over --broker's mqtt://USER@HOST, then "+envUsername)
	fs.StringVar(&lf.passwordFile, "password-file", "", "read the password for every group that sets none from `FILE` (its trailing newline dropped); wins over --broker's mqtt://USER:PASSWORD@HOST, then "+envPassword)
}

// optString is a string flag that knows whether it was given, so that
// --username "" (an empty user name) differs from no --username.
type optString struct {
	v   string
	set bool
}

func (o *optString) String() string     { return o.v }
func (o *optString) Set(v string) error { o.v, o.set = v, true; return nil }

// login is the command line's login: the flags, then --broker's URL
// (brokerLogin), then the environment.
func (lf *loginFlags) login(e *env, brokerLogin plans.Login) (plans.Login, error) {
	var l plans.Login
	if lf.username.set {
		l.Username, l.HasUsername = lf.username.v, true
	}
	if lf.passwordFile != "" {
		pw, err := readPasswordFile(lf.passwordFile)
		if err != nil {
			return plans.Login{}, invalid(err)
		}
		l.Password, l.HasPassword = pw, true
	}
	return l.Or(brokerLogin).Or(envLogin(e)), nil
}

// envLogin is the environment's login (MQPLAN_USERNAME, MQPLAN_PASSWORD).
func envLogin(e *env) plans.Login {
	var l plans.Login
	if e.lookupEnv == nil {
		return l
	}
	if v, ok := e.lookupEnv(envUsername); ok {
		l.Username, l.HasUsername = v, true
	}
	if v, ok := e.lookupEnv(envPassword); ok {
		l.Password, l.HasPassword = plans.Secret(v), true
	}
	return l
}

// readPasswordFile reads a --password-file: at most maxPasswordFile
// bytes, its trailing line break dropped (what echo and an editor
// leave); other white space is the password's. Errors never hold the
// file's content.
func readPasswordFile(path string) (plans.Secret, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("--password-file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPasswordFile+1))
	if err != nil {
		return "", fmt.Errorf("--password-file %s: %w", path, err)
	}
	if len(data) > maxPasswordFile {
		return "", fmt.Errorf("--password-file %s: larger than %d bytes: not a password file", path, maxPasswordFile)
	}
	data = bytes.TrimSuffix(data, []byte("\n"))
	data = bytes.TrimSuffix(data, []byte("\r"))
	if len(data) == 0 {
		return "", fmt.Errorf("--password-file %s: the file is empty", path)
	}
	if bytes.ContainsAny(data, "\n\x00") {
		return "", fmt.Errorf("--password-file %s: holds more than one line: a password is one line", path)
	}
	return plans.Secret(data), nil
}
