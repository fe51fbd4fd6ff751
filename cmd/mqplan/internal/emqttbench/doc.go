// Package emqttbench emulates emqtt-bench's conn, sub and pub commands for
// `mqplan conn|sub|pub`: it owns their command line (emqtt-bench's options,
// short and long names, defaults and getopt forms, and --help), the plan a
// command line compiles into (the same plan a user could write, loaded
// with every check of the plan language, its problems reported against
// the options that caused them), and emqtt-bench's per-second lines.
//
// It must not run anything or touch the process: no signals, no exit
// codes, no standard streams of its own, no environment. The command
// (cmd/mqplan) runs the compiled plan like any other, stops it on Ctrl-C,
// prints the report and chooses the exit code; every error this package
// returns is a command-line problem (exit 2 there).
//
// It lives under cmd/mqplan/internal because its API is shaped for that
// one command and may change with it; the plan language (plans) is the
// public contract, and a compiled command line is just a plan.
//
// Use:
//
//	o, err := emqttbench.Parse(emqttbench.Pub, args)  // errors name the option
//	if o.Help() { emqttbench.WriteHelp(stdout, emqttbench.Pub) }
//	p, err := o.Compile(runID)                        // p.Text, p.Program, p.Notes
//	lines := emqttbench.NewProgress(stdout, stderr, emqttbench.Pub)
//	runner.Run(ctx, p.Program, runner.Options{Progress: lines.Update})
package emqttbench
