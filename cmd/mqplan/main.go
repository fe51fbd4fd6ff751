// Command mqplan turns a declarative YAML test plan into an MQTT load test
// and a CI verdict.
//
//	mqplan run plans/1to1-qos1.yaml        run a plan (embedded broker by default)
//	mqplan validate plans/*.yaml           check plans without running them
//	mqplan explain plans/1to1-qos1.yaml    print the compiled phases and load
//	mqplan broker --listen 127.0.0.1:1883  run the embedded broker standalone
//
// Exit codes: 0 every threshold held, 1 a threshold failed, 2 the plan or
// the command line is invalid, 3 the run could not complete.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Exit codes, the public contract of plan-format.md.
const (
	exitPass       = 0
	exitFail       = 1
	exitInvalid    = 2
	exitIncomplete = 3
)

// exitError carries the exit code chosen for an error; only main turns it
// into a process exit.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// invalid marks an error as a plan or command-line problem (exit 2).
func invalid(err error) error { return &exitError{code: exitInvalid, err: err} }

// incomplete marks an error as a run that could not complete (exit 3).
func incomplete(err error) error { return &exitError{code: exitIncomplete, err: err} }

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// env is the process environment the commands use, so tests can run
// them in-process.
type env struct {
	stdout, stderr io.Writer
	stdin          io.Reader
}

// run executes one command line and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr, stdin: stdin}
	code, err := dispatch(e, args)
	if err != nil {
		var xe *exitError
		if errors.As(err, &xe) {
			code = xe.code
		} else {
			code = exitIncomplete
		}
		if !errors.Is(err, errReported) {
			fmt.Fprintf(stderr, "mqplan: %v\n", err)
		}
	}
	return code
}

// errReported marks errors whose message was already printed.
var errReported = errors.New("reported")

const usage = `mqplan turns a YAML test plan into an MQTT load test and a CI verdict.

Usage:
  mqplan run [flags] PLAN          run a plan and print the report
  mqplan validate PLAN...          check plans without running them
  mqplan explain [flags] PLAN      print the compiled phases and load, without connecting
  mqplan broker [flags]            run the embedded MQTT broker until Ctrl-C
  mqplan conn|sub|pub [options]    emqtt-bench's commands and options, compiled into a plan
  mqplan version                   print the version

Run "mqplan COMMAND --help" for a command's flags.

Exit codes: 0 pass, 1 a threshold failed, 2 invalid plan or command line,
3 the run could not complete.
`

func dispatch(e *env, args []string) (int, error) {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return exitInvalid, nil
	}
	switch args[0] {
	case "run":
		return cmdRun(e, args[1:])
	case "validate":
		return cmdValidate(e, args[1:])
	case "explain":
		return cmdExplain(e, args[1:])
	case "broker":
		return cmdBroker(e, args[1:])
	case "conn", "sub", "pub":
		return cmdEmqtt(e, emqttKind(args[0]), args[1:])
	case "version", "--version":
		fmt.Fprintf(e.stdout, "mqplan %s\n", version)
		return exitPass, nil
	case "help", "-h", "--help":
		fmt.Fprint(e.stdout, usage)
		return exitPass, nil
	}
	fmt.Fprint(e.stderr, usage)
	return exitInvalid, invalid(fmt.Errorf("unknown command %q", args[0]))
}
