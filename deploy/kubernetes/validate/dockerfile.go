package validate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Dockerfile is what the checks need of a Dockerfile: its stages and
// instructions, with ARG defaults. It reads the plain subset the
// repository's Dockerfile is written in (FROM, ARG, WORKDIR, COPY, RUN,
// USER, ENTRYPOINT, LABEL, comments, backslash continuations) and refuses
// the rest, so that a change the checks cannot follow is an error.
type Dockerfile struct {
	// Args are the global ARG defaults (before the first FROM), as the
	// build sees them without --build-arg: FROM lines read them.
	Args   map[string]string
	Stages []Stage
}

// Stage is one FROM and what follows it.
type Stage struct {
	Name, Base string
	// Args are the ARGs the stage declares, with their defaults (an ARG
	// without one takes the global default), as Docker scopes them: only
	// these expand in the stage's instructions (wherever in the stage the
	// ARG stands: order within a stage is not modelled).
	Args map[string]string
	// Lines are the instructions after FROM: keyword (upper case) and the
	// rest of the line, continuations joined.
	Lines [][2]string
}

// Final is the stage the image is made of: the last.
func (d *Dockerfile) Final() *Stage { return &d.Stages[len(d.Stages)-1] }

// ReadDockerfile parses the file at name.
func ReadDockerfile(name string) (*Dockerfile, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d := &Dockerfile{Args: map[string]string{}}
	sc := bufio.NewScanner(f)
	var line string
	lineNo, start := 0, 0
	for sc.Scan() {
		lineNo++
		text := strings.TrimSpace(sc.Text())
		if line == "" && (text == "" || strings.HasPrefix(text, "#")) {
			continue
		}
		if line == "" {
			start = lineNo
		}
		if cont, ok := strings.CutSuffix(text, `\`); ok {
			line += cont + " "
			continue
		}
		line += text
		if err := d.add(line); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, start, err)
		}
		line = ""
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if line != "" {
		return nil, fmt.Errorf("%s:%d: a continuation with nothing after it", name, start)
	}
	if len(d.Stages) == 0 {
		return nil, fmt.Errorf("%s: no FROM", name)
	}
	return d, nil
}

func (d *Dockerfile) add(line string) error {
	kw, rest, _ := strings.Cut(line, " ")
	kw, rest = strings.ToUpper(kw), strings.TrimSpace(rest)
	switch kw {
	case "FROM":
		f := strings.Fields(rest)
		s := Stage{Base: expand(f[0], d.Args), Args: map[string]string{}}
		switch {
		case len(f) == 3 && strings.EqualFold(f[1], "AS"):
			s.Name = f[2]
		case len(f) != 1:
			return fmt.Errorf("FROM %s: want IMAGE [AS NAME]", rest)
		}
		d.Stages = append(d.Stages, s)
		return nil
	case "ARG":
		name, def, hasDef := strings.Cut(rest, "=")
		args := d.Args
		if len(d.Stages) > 0 {
			args = d.Stages[len(d.Stages)-1].Args
			if !hasDef {
				def = d.Args[name]
			}
		}
		args[name] = def
	case "WORKDIR", "COPY", "RUN", "USER", "ENTRYPOINT", "LABEL":
	default:
		return fmt.Errorf("%s: an instruction these checks do not read", kw)
	}
	if len(d.Stages) == 0 {
		if kw != "ARG" {
			return fmt.Errorf("%s before the first FROM", kw)
		}
		return nil
	}
	st := &d.Stages[len(d.Stages)-1]
	st.Lines = append(st.Lines, [2]string{kw, rest})
	return nil
}

// expand replaces ${NAME} and $NAME with args (an undeclared one is
// empty, as in Docker).
func expand(s string, args map[string]string) string {
	return os.Expand(s, func(name string) string { return args[name] })
}

// Last is the rest of the stage's last instruction kw, or "".
func (s *Stage) Last(kw string) string {
	v := ""
	for _, l := range s.Lines {
		if l[0] == kw {
			v = l[1]
		}
	}
	return v
}

// Entrypoint is the final stage's ENTRYPOINT, which must be in exec
// (JSON) form: the shell form needs a shell the image does not have.
func (d *Dockerfile) Entrypoint() ([]string, error) {
	var ep []string
	raw := d.Final().Last("ENTRYPOINT")
	if err := json.Unmarshal([]byte(raw), &ep); err != nil || len(ep) == 0 {
		return nil, fmt.Errorf("ENTRYPOINT %s: want the exec form [\"/path\", ...]", raw)
	}
	return ep, nil
}

// GoBuild is the `go build` RUN line of stage name: the environment it
// sets and the go command's arguments, words split as a shell would for
// this subset (double quotes; ${ARG} expanded; no other shell syntax).
func (d *Dockerfile) GoBuild(stage string) (env, args []string, err error) {
	for _, s := range d.Stages {
		if s.Name != stage {
			continue
		}
		for _, l := range s.Lines {
			if l[0] != "RUN" || !strings.Contains(l[1], "go build") {
				continue
			}
			words, err := shellWords(expand(l[1], s.Args))
			if err != nil {
				return nil, nil, fmt.Errorf("RUN %s: %w", l[1], err)
			}
			for len(words) > 0 && strings.Contains(words[0], "=") {
				env, words = append(env, words[0]), words[1:]
			}
			if len(words) < 2 || words[0] != "go" || words[1] != "build" {
				return nil, nil, fmt.Errorf("RUN %s: want [NAME=VALUE ...] go build ...", l[1])
			}
			return env, words[1:], nil
		}
	}
	return nil, nil, fmt.Errorf("no RUN ... go build in stage %q", stage)
}

func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case strings.ContainsRune("'\\;&|<>`$(){}", r):
			return nil, fmt.Errorf("%q: shell syntax these checks do not read", r)
		case (r == ' ' || r == '\t') && !quoted:
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("an unterminated quote")
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
