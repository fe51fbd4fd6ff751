// Command mqplan turns a declarative YAML test plan into an MQTT load test
// and a CI verdict.
//
//	mqplan run plans/1to1-qos1.yaml        run a plan (embedded broker by default)
//	mqplan validate plans/*.yaml           check plans without running them
//	mqplan explain plans/1to1-qos1.yaml    print the compiled phases and load
//	mqplan report now.json                 re-render a saved JSON result
//	mqplan compare last.json now.json      compare two saved results
//	mqplan merge part-*.json               merge a run's partial results and judge them
//	mqplan find-max plans/1to1-qos1.yaml   the highest rate at which the plan passes
//	mqplan broker --listen 127.0.0.1:1883  run the embedded broker standalone
//	mqplan conn|sub|pub [options]          emqtt-bench's commands, compiled into a plan
//	mqplan schema > plan.schema.json       the JSON Schema of plan files, for editors
//
// Exit codes: 0 every threshold held, 1 a threshold failed, 2 the plan or
// the command line is invalid, 3 the run could not complete.
//
// This package owns the process: the subcommands and their flags, the
// files named on the command line, the signals that stop a run, and the
// exit code. It must hold no business logic: plans loads and compiles
// plans, runner runs them, report judges and prints them, broker is the
// embedded broker, and emqttbench (internal) translates emqtt-bench's
// command lines. What it takes from the process (standard streams,
// environment, signals, exit, CPUs) comes through env, so that tests run
// the commands in-process; only main touches the real process.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"

	"github.com/mqplan/mqplan/cmd/mqplan/internal/emqttbench"
	"github.com/mqplan/mqplan/report"
)

// Exit codes, the public contract of docs/plan-format.md.
const (
	exitPass       = 0
	exitFail       = 1
	exitInvalid    = 2
	exitIncomplete = 3
	// exitInconclusive: the only thresholds that failed are latency
	// thresholds that mqplan's own lack of CPU explains; a CI may retry
	// on it without reading the report, and a script that takes any
	// non-zero code for a failure stays safe.
	exitInconclusive = 4
)

// exitError carries the exit code chosen for an error; only exitCode reads
// it, and only main turns it into a process exit.
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

// errReported marks errors whose message was already printed (a flag
// error with its usage, a verdict in the report): main prints nothing
// more for them.
var errReported = errors.New("reported")

// The verdicts other than a pass, as errors: a command returns one after
// its report has said it, so that the exit code always comes from the
// error and the two can never disagree.
var (
	errFailed     = &exitError{code: exitFail, err: fmt.Errorf("a threshold failed: %w", errReported)}
	errIncomplete = &exitError{code: exitIncomplete, err: fmt.Errorf("the run did not complete: %w", errReported)}
	// errInconclusive: its latency failed as mqplan's own disturbance
	// explains (report.VerdictInconclusive).
	errInconclusive = &exitError{code: exitInconclusive, err: fmt.Errorf("the run was inconclusive: %w", errReported)}
)

// isVerdict reports whether err is a verdict (errFailed, errIncomplete)
// rather than a failure of the command itself.
func isVerdict(err error) bool {
	return err == errFailed || err == errIncomplete || err == errInconclusive
}

// exitCode maps what a command returned to the process's exit code: nil
// is 0, an error marked by invalid, incomplete or a verdict has its code,
// and any other error is a run that could not complete (3).
func exitCode(err error) int {
	if err == nil {
		return exitPass
	}
	var xe *exitError
	if errors.As(err, &xe) {
		return xe.code
	}
	return exitIncomplete
}

func main() {
	os.Exit(run(osEnv(), os.Args[1:]))
}

// env is what the commands take from the process, injected as k6's
// GlobalState is: main builds the real one (osEnv); tests build fakes, so
// that exit codes, interrupts and the emqtt-bench commands are tested
// in-process. Files named on the command line are opened by name.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// lookupEnv reads an environment variable: a plan's ${VAR}
	// (passwords, CI variables) and GOMAXPROCS.
	lookupEnv func(name string) (string, bool)
	// notify relays the given signals to c, as signal.Notify does, without
	// blocking (a full c misses the signal); stopNotify ends that, as
	// signal.Stop does: once it returns nothing more is sent on c.
	notify     func(c chan<- os.Signal, sigs ...os.Signal)
	stopNotify func(c chan<- os.Signal)
	// exit ends the process at once with code (a second Ctrl-C). A fake
	// may return; the caller then returns too.
	exit func(code int)
	// setProcs sets how many CPUs the run may use (runtime.GOMAXPROCS,
	// which is the whole process's).
	setProcs func(n int)
	// isTerminal says whether w is a terminal, for colour (nil: never).
	isTerminal func(w io.Writer) bool
}

// osEnv is the real process's env.
func osEnv() *env {
	return &env{
		stdin:      os.Stdin,
		stdout:     os.Stdout,
		stderr:     os.Stderr,
		lookupEnv:  os.LookupEnv,
		notify:     signal.Notify,
		stopNotify: signal.Stop,
		exit:       os.Exit,
		setProcs:   func(n int) { runtime.GOMAXPROCS(n) },
		isTerminal: isTerminal,
	}
}

// run executes one command line and returns the exit code.
func run(e *env, args []string) int { return finish(e, dispatch(e, args)) }

// finish prints a command's error on standard error, unless it was
// reported already, and returns its exit code.
func finish(e *env, err error) int {
	if err != nil && !errors.Is(err, errReported) {
		fmt.Fprintf(e.stderr, "mqplan: %s\n", errText(err))
	}
	return exitCode(err)
}

// errText is err's message for standard error, its control characters
// (but newline and tab) escaped: a file name given on the command line,
// a broker's error reason or a saved result's text may carry escape
// sequences that would act on the terminal (see report.TerminalSafe).
func errText(err error) string { return report.TerminalSafe(err.Error(), "\n\t") }

const usage = `mqplan turns a YAML test plan into an MQTT load test and a CI verdict.

Usage:
  mqplan run [flags] PLAN          run a plan and print the report
  mqplan validate PLAN...          check plans without running them
  mqplan explain [flags] PLAN      print the compiled phases and load, without connecting
  mqplan report [flags] RESULT     re-render a result saved with --out json=FILE
  mqplan compare [flags] A B       compare two saved results, with the change of each key metric
  mqplan merge [flags] PART...     merge the partial results of one run (run --partial) and judge them
  mqplan find-max [flags] PLAN     search a knob (a group's rate or count) for the highest value that passes
  mqplan broker [flags]            run the embedded MQTT broker until Ctrl-C
  mqplan conn|sub|pub [options]    emqtt-bench's commands and options, compiled into a plan
  mqplan schema                    print the JSON Schema of plan files, for editors
  mqplan version                   print the version, Go release and VCS revision
  mqplan completion bash|zsh|fish  print a shell completion script

Run "mqplan COMMAND --help" for a command's flags.

Exit codes: 0 pass, 1 a threshold failed, 2 invalid plan or command line,
3 the run could not complete.
`

// dispatch runs the command args name; nil means exit 0, and an error
// carries its exit code (see exitCode).
func dispatch(e *env, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return invalid(errReported)
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
	case "report":
		return cmdReport(e, args[1:])
	case "compare":
		return cmdCompare(e, args[1:])
	case "merge":
		return cmdMerge(e, args[1:])
	case "find-max":
		return cmdFindMax(e, args[1:])
	case "conn", "sub", "pub":
		return cmdEmqtt(e, emqttbench.Kind(args[0]), args[1:])
	case "completion":
		return cmdCompletion(e, args[1:])
	case "schema":
		return cmdSchema(e, args[1:])
	case "version", "--version":
		fmt.Fprintln(e.stdout, buildVersion())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(e.stdout, usage)
		return nil
	}
	return unknownCommand(args[0])
}
