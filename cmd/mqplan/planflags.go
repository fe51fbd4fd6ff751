package main

import (
	"flag"

	"github.com/mqplan/mqplan/plans"
)

// planFlags are the flags shared by run and explain.
type planFlags struct {
	broker string
	sets   stringList
	login  loginFlags
}

func (p *planFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.broker, "broker", "", "broker URL replacing the plan's, e.g. mqtt://127.0.0.1:1883 (or \"embedded\"); mqtt://USER:PASSWORD@HOST gives the login of every group that sets none")
	fs.Var(&p.sets, "set", "override a plan value, e.g. --set duration=10s --set groups.pub.count=50 (repeatable)")
	p.login.register(fs)
}

// options are the plan's load options: --set, then --broker as
// broker.url (without its user information, which joins the login of
// --username, --password-file and the environment; see login.go).
func (p *planFlags) options(e *env) (plans.LoadOptions, error) {
	sets := append([]string(nil), p.sets...)
	var fromURL plans.Login
	if p.broker != "" {
		var u string
		u, fromURL = plans.SplitLogin(p.broker)
		sets = append(sets, "broker.url="+u)
	}
	opts := e.loadOptions(sets)
	login, err := p.login.login(e, fromURL)
	if err != nil {
		return opts, err
	}
	opts.Login = login
	return opts, nil
}

// load reads and compiles the plan; every error is exit 2.
func (p *planFlags) load(e *env, path, runID string) (*plans.Program, error) {
	opts, err := p.options(e)
	if err != nil {
		return nil, err
	}
	plan, err := plans.Load(path, opts)
	if err != nil {
		return nil, invalid(err)
	}
	prog, err := plans.Compile(plan, plans.CompileOptions{RunID: runID})
	if err != nil {
		return nil, invalid(err)
	}
	return prog, nil
}

// loadOptions are the options the commands load plans with: the files
// they name are checked, and "-" and ${VAR} read this process's standard
// input and environment.
func (e *env) loadOptions(sets []string) plans.LoadOptions {
	return plans.LoadOptions{Sets: sets, CheckFiles: true, Stdin: e.stdin, LookupEnv: e.lookupEnv, Login: envLogin(e)}
}
