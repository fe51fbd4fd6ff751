package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mqplan/mqplan/internal/suggest"
	"github.com/mqplan/mqplan/plans"
)

// The flags of the commands: how they are split from the plan files and
// parsed, and how a mistake is answered.
//
// Command-line mistakes are answered in at most three lines: what is
// wrong with what to write instead, then where the command's flags are
// listed. The whole usage (56 lines for run) would scroll the mistake
// off the screen, which is what Go's flag package does by default.

// cmdLineError is a command-line mistake of the command name (exit 2):
// "NAME: what is wrong; what to write", then a pointer to its --help.
func cmdLineError(name string, err error) error {
	return invalid(fmt.Errorf("%s: %w\n%s", name, err, helpPointer(name)))
}

// helpPointer is the line that says where a command's flags are.
func helpPointer(name string) string {
	return fmt.Sprintf("Run \"mqplan %s --help\" for its flags and examples.", name)
}

// flagError words an error of fs.Parse (Go's flag package words them as
// "flag provided but not defined: -duration") for the command line in
// (the arguments as given, for the value that followed a flag), with a
// suggestion where one is likely.
func flagError(fs *flag.FlagSet, in []string, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Errorf("unknown flag %s%s", dashes(name)+name, unknownFlagHint(fs, name, flagValue(in, name)))
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("%s%s needs a value", dashes(name), name)
	}
	// invalid value "x" for flag -procs: parse error
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if v, after, ok := strings.Cut(rest, " for flag -"); ok {
			name, why, _ := strings.Cut(after, ": ")
			if want := flagWants(fs.Lookup(name)); want != "" {
				why = want
			}
			return fmt.Errorf("%s%s %s: %s", dashes(name), name, v, why)
		}
	}
	return errors.New(msg)
}

// flagWants says what a typed flag takes, for a value it could not
// parse (the flag package says only "parse error"); "" for other flags.
func flagWants(f *flag.Flag) string {
	if f == nil {
		return ""
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case time.Duration:
		return "want a duration like 30s, 1m30s or 500ms"
	case int, int64, uint, uint64:
		return "want a whole number"
	case float64:
		return "want a number"
	case bool:
		return "want true or false"
	}
	return ""
}

// dashes is how a flag is shown: -d for a letter, --duration for a word.
func dashes(name string) string {
	if len(name) == 1 {
		return "-"
	}
	return "--"
}

// flagValue is the value given after the flag name in in (--name=V or
// --name V), "" when none.
func flagValue(in []string, name string) string {
	for i, a := range in {
		bare := strings.TrimLeft(a, "-")
		if v, ok := strings.CutPrefix(bare, name+"="); ok && bare != a {
			return v
		}
		if bare == name && bare != a && i+1 < len(in) && !strings.HasPrefix(in[i+1], "-") {
			return in[i+1]
		}
	}
	return ""
}

// flagHabits answer flags of other tools that mqplan takes another way.
var flagHabits = map[string]string{
	"password": "a password on the command line shows in ps: give it with --password-file FILE or the environment variable " + envPassword,
	"P":        "a password on the command line shows in ps: give it with --password-file FILE or the environment variable " + envPassword,
	"u":        "the user name is --username NAME",
	"user":     "the user name is --username NAME",
	"host":     "name the broker with --broker mqtt://HOST:1883",
	"url":      "name the broker with --broker mqtt://HOST:1883",
	"d":        "set the plan's duration with --set duration=VALUE",
	"c":        "set a group's clients with --set groups.NAME.count=N",
	"vus":      "set a group's clients with --set groups.NAME.count=N",
	"count":    "set a group's clients with --set groups.NAME.count=N",
	"rate":     "set a group's publish rate with --set groups.NAME.publish.rate=500/s",
	"interval": "set a group's publish interval with --set groups.NAME.publish.every=VALUE",
	"qos":      "set a group's QoS with --set groups.NAME.publish.qos=1 (or subscribe.qos)",
}

// setKeys are the top-level plan keys whose value a --set gives in one
// word (--duration 10s → --set duration=10s).
var setKeys = []string{"name", "description", "warmup", "ramp", "duration", "seed", "drain", "disturbance"}

// unknownFlagHint suggests what an unknown flag meant: a plan value
// (--duration 10s → --set duration=10s), another tool's flag, or a flag of
// the command one typo away. "" when nothing is likely.
func unknownFlagHint(fs *flag.FlagSet, name, value string) string {
	if slices.Contains(setKeys, name) && slices.Contains(plans.PlanKeys(), name) && fs.Lookup("set") != nil {
		if value == "" {
			value = "VALUE"
		}
		return fmt.Sprintf(": plan values are set with --set, e.g. --set %s=%s", name, value)
	}
	if h, ok := flagHabits[name]; ok && fs.Lookup("set") != nil {
		if name == "d" && value != "" {
			h = strings.Replace(h, "VALUE", value, 1)
		}
		return "; " + h
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if s := suggest.Closest(name, names, suggest.Limit(name, 2), suggest.First); s != "" {
		return fmt.Sprintf("; did you mean --%s?", s)
	}
	return ""
}

// unknownCommand is the answer to `mqplan NAME` for a NAME that is no
// command: the nearest command, and where the commands are listed.
func unknownCommand(name string) error {
	var names []string
	for _, m := range usageLine.FindAllStringSubmatch(usage, -1) {
		names = append(names, strings.Split(m[1], "|")...)
	}
	hint := ""
	if s := suggest.Closest(name, names, suggest.Limit(name, 2), suggest.First); s != "" {
		hint = fmt.Sprintf("; did you mean %q?", s)
	}
	return invalid(fmt.Errorf("unknown command %q%s\n%s", name, hint, `Run "mqplan help" for the commands.`))
}

// parseFlags parses, mapping --help to done with no error (exit 0) and
// bad flags to an error already reported with the usage (exit 2).
// Flags may come before, between or after the plan files (`mqplan run
// plan.yaml --quiet`), as with most command-line tools; Go's flag package
// alone stops at the first non-flag and would take --quiet for a file. A
// "--" ends the flags: what follows is files, even if it starts with -.
// args are the non-flag arguments, in order.
//
// A flag error is one line naming the flag, with a suggestion where one
// is likely (--duration 10s → --set duration=10s), and a pointer to the
// command's --help (see cmdLineError): the flag package would print the
// whole usage, scrolling the error off the screen.
func parseFlags(fs *flag.FlagSet, in []string) (args []string, done bool, err error) {
	flags, args := splitFlags(fs, in)
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err = fs.Parse(flags)
	fs.Usage = usage
	fs.SetOutput(out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage()
			return nil, true, nil
		}
		return nil, true, cmdLineError(fs.Name(), flagError(fs, in, err))
	}
	return args, false, nil
}

// splitFlags separates the flags of fs (with their values) from the other
// arguments. An argument that looks like a flag goes to flags even when fs
// does not define it, so that fs.Parse names it in its error. A flag that
// takes a value takes the next argument unless written --name=value.
func splitFlags(fs *flag.FlagSet, in []string) (flags, args []string) {
	for i := 0; i < len(in); i++ {
		a := in[i]
		switch {
		case a == "--":
			return flags, append(args, in[i+1:]...)
		case len(a) < 2 || a[0] != '-':
			// "-" alone is standard input, a file name.
			args = append(args, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil && !isBoolFlag(f) && i+1 < len(in) {
			i++
			flags = append(flags, in[i])
		}
	}
	return flags, args
}

// isBoolFlag reports whether f needs no value (--quiet), as the flag
// package decides it.
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
