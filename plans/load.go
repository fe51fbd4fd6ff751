package plans

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/mqplan/mqplan/internal/yamlnode"
)

// LoadOptions controls Load.
type LoadOptions struct {
	// LookupEnv resolves ${VAR}; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Sets are --set key=value overrides, applied before decoding, e.g.
	// "duration=10s", "broker.url=mqtt://127.0.0.1:1883", "groups.pub.count=50",
	// "groups[1].publish.qos=1", "groups.sub.subscribe[0].topic=a/#".
	Sets []string
	// CheckFiles reads the files the plan names (broker.tls ca, cert and
	// key) and reports a missing, unreadable or non-PEM file as a plan
	// problem at its key, so that validate finds it rather than the run.
	// The commands set it; tests of the language, whose plans name files
	// that do not exist, leave it off.
	CheckFiles bool
	// Stdin is what the path "-" reads, so that a command whose standard
	// input is not the process's (a test, an embedding program) can load
	// a plan from it; nil means os.Stdin. It is read up to the size bound,
	// as a file is.
	Stdin io.Reader
	// Login is the user name and password of the command line and the
	// environment, for every group that sets none of its own; before the
	// broker URL's (see login.go).
	Login Login
}

// setPosFile is the Pos.File of problems that come from --set overrides
// rather than from the plan file: they have no line to point at.
const setPosFile = "--set"

// maxPlanBytes bounds the plan file. A real plan is a few kilobytes; the
// limit only keeps a wrong file (a log, a binary) from costing seconds of
// parsing and a large tree before it is rejected.
const maxPlanBytes = 4 << 20

// Load reads the plan file at path ("-" for standard input) and returns
// the decoded, defaulted and validated plan.
//
// A file that cannot be read gives the read error as is (it names the file,
// e.g. "open plans/nope.yaml: no such file or directory"). Problems in the
// plan give Errors: every problem at once, sorted by line and column.
func Load(path string, opts LoadOptions) (*Plan, error) {
	var data []byte
	var err error
	if path == "-" {
		stdin := opts.Stdin
		if stdin == nil {
			stdin = os.Stdin
		}
		data, err = io.ReadAll(io.LimitReader(stdin, maxPlanBytes+1))
		if err != nil {
			return nil, fmt.Errorf("read plan from standard input: %w", err)
		}
	} else {
		data, err = readPlanFile(path)
		if err != nil {
			return nil, err
		}
	}
	if len(data) > maxPlanBytes {
		// Only maxPlanBytes+1 bytes were read, so the size is unknown:
		// name the limit.
		return nil, Errors{tooLarge(path)}
	}
	return LoadBytes(path, data, opts)
}

// readPlanFile reads at most maxPlanBytes+1 bytes of path: /dev/zero,
// /dev/stdin fed by `yes` or a FIFO nobody closes never end, and reading
// them whole would grow without bound.
func readPlanFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxPlanBytes+1))
}

// tooLarge is the problem of a plan over maxPlanBytes, at its first line.
func tooLarge(file string) *Error {
	return &Error{Pos: Pos{File: file, Line: 1, Col: 1},
		Msg: fmt.Sprintf("the plan is larger than the limit of %d MiB (%d bytes): is this the right file?", maxPlanBytes>>20, maxPlanBytes)}
}

// LoadBytes decodes a plan from data; file names it in positions, gives the
// default plan name (its base name without extension) and the directory
// that relative TLS paths are resolved against.
//
// Every problem is returned as Errors and the plan is nil; LoadBytes never
// panics, whatever data holds.
func LoadBytes(file string, data []byte, opts LoadOptions) (*Plan, error) {
	l := &loader{file: file, data: data, lookup: opts.LookupEnv, origin: map[*yaml.Node]string{}, checkFiles: opts.CheckFiles, login: opts.Login}
	if l.lookup == nil {
		l.lookup = os.LookupEnv
	}
	p := l.load(opts.Sets)
	if p != nil {
		// The work the plan implies is bounded before anything (the
		// threshold compiler, Compile) does it.
		l.errs = append(l.errs, checkWork(p)...)
	}
	if p != nil && len(p.Thresholds) > 0 {
		// Threshold problems are plan problems too, reported with the
		// others in one pass; the compiled thresholds stay with the plan,
		// for Compile.
		ths, errs := compileThresholds(p)
		l.errs = append(l.errs, errs...)
		keepCompiled(p, ths)
	}
	if len(l.errs) > 0 {
		return nil, l.sorted()
	}
	return p, nil
}

// loader holds the state of one LoadBytes call. Its methods report problems
// with errorf and keep going, so that one call finds every problem.
type loader struct {
	file   string
	data   []byte
	lookup func(string) (string, bool)
	errs   Errors
	// origin maps a node made by a --set override to the key it was set
	// with, so that problems in it are reported as "--set: <key>: ...".
	origin map[*yaml.Node]string
	// expander expands aliases, in the file and in --set values, within
	// one node budget.
	expander *yamlnode.Expander
	// groupIndex is the index of the group being decoded, and ids the
	// explicit client ids seen, for checkClientIDs.
	groupIndex int
	ids        []idDecl
	// checkFiles is LoadOptions.CheckFiles.
	checkFiles bool
	// staged is set when the plan has stages:, which give the publish
	// rate instead of the groups (stages.go).
	staged bool
	// payloadUse is where the last publish: section wrote its payload
	// fields, for checkPayload.
	payloadUse payloadUse
	// login is LoadOptions.Login; urlCreds the broker URLs' (urlSeen:
	// one was given), for applyLogin.
	login    Login
	urlCreds Login
	urlSeen  bool
	// defaultProperty lists the groups whose template took header:
	// property by default, which checkHeaderProtocols moves back to
	// prefix when an MQTT 3 subscriber could not read it.
	defaultProperty []int
}

func (l *loader) load(sets []string) *Plan {
	if len(l.data) > maxPlanBytes {
		l.errs = append(l.errs, tooLarge(l.file))
		return nil
	}
	root := l.parse()
	if root == nil {
		return nil
	}
	root = l.expandAliases(root)
	if l.expander.OverBudget() || root.Kind != yaml.MappingNode {
		// Past the node budget the tree is cut short, and decoding it
		// would only add noise to the one problem that matters.
		return nil
	}
	l.applySets(root, sets)
	return l.plan(root)
}

// sorted returns the problems ordered by line then column (--set problems,
// which have no line, first), without exact repeats: a node reached through
// several aliases would otherwise report the same problem more than once.
func (l *loader) sorted() Errors {
	es := append(Errors(nil), l.errs...)
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Pos.Line != es[j].Pos.Line {
			return es[i].Pos.Line < es[j].Pos.Line
		}
		return es[i].Pos.Col < es[j].Pos.Col
	})
	out := es[:0]
	seen := map[string]bool{}
	for _, e := range es {
		s := e.Error()
		if seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, e)
	}
	return out
}

// pos is the position of n in the plan file, or the --set position for a
// node that a --set override made (those have no line).
func (l *loader) pos(n *yaml.Node) Pos {
	if n == nil || n.Line <= 0 {
		return Pos{File: setPosFile}
	}
	return Pos{File: l.file, Line: n.Line, Col: max(n.Column, 1)}
}

// errorf records a problem at n.
func (l *loader) errorf(n *yaml.Node, path, format string, args ...any) {
	l.errs = append(l.errs, &Error{Pos: l.pos(n), Path: path, Msg: fmt.Sprintf(format, args...)})
}

// at returns the path of node n reached as path: a node made by --set is
// named by the key it was set with, so the user recognises it.
func (l *loader) at(path string, n *yaml.Node) string {
	if k, ok := l.origin[n]; ok {
		return k
	}
	return path
}

// planChildPath is path.key, or key at the top level.
func planChildPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// planIndexPath is path[i].
func planIndexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// defaultPlanName is the plan name when the plan does not give one: the file
// name without its extension.
func defaultPlanName(file string) string {
	if file == "-" {
		return "stdin"
	}
	base := filepath.Base(file)
	base = strings.TrimSuffix(base, filepath.Ext(base))
	if base == "" || base == "." || base == string(filepath.Separator) {
		return "plan"
	}
	return base
}
