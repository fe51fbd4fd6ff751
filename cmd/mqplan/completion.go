package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"text/template"
)

// completionCommand is one command as the completion scripts offer it.
type completionCommand struct {
	Name, Summary string
	// Flags are its long flags, without dashes.
	Flags []string
}

// usageLine finds the commands of the top-level usage: "  mqplan NAME[|NAME] ... summary".
var usageLine = regexp.MustCompile(`(?m)^  mqplan ([a-z|-]+)(?: [^ ]+)*?\s{2,}(\S.*)$`)

// flagLine finds a flag in a command's --help: Go's flag package writes
// "  -name type", emqtt-bench's help "  -c, --count N" and "      --ws".
var flagLine = regexp.MustCompile(`(?m)^  (?:-[A-Za-z], |    )?--?([a-z][a-z0-9_-]*)`)

// completionCommands reads the commands from the usage text and each
// command's flags from its own --help, so that the scripts cannot drift
// from what mqplan accepts: a new command or flag is offered as soon as
// --help shows it.
func completionCommands() []completionCommand {
	var out []completionCommand
	for _, m := range usageLine.FindAllStringSubmatch(usage, -1) {
		for _, name := range strings.Split(m[1], "|") {
			c := completionCommand{Name: name, Summary: strings.TrimSpace(m[2])}
			if name != "version" && name != "completion" {
				c.Flags = helpFlags(name)
			}
			out = append(out, c)
		}
	}
	return out
}

// helpFlags runs `mqplan NAME --help` in-process and collects its flags.
func helpFlags(name string) []string {
	var b bytes.Buffer
	e := &env{
		stdin: strings.NewReader(""), stdout: &b, stderr: &b,
		lookupEnv:  func(string) (string, bool) { return "", false },
		notify:     func(chan<- os.Signal, ...os.Signal) {},
		stopNotify: func(chan<- os.Signal) {},
		exit:       func(int) {},
		setProcs:   func(int) {},
	}
	_ = dispatch(e, []string{name, "--help"})
	var flags []string
	for _, m := range flagLine.FindAllStringSubmatch(b.String(), -1) {
		if !slices.Contains(flags, m[1]) {
			flags = append(flags, m[1])
		}
	}
	if !slices.Contains(flags, "help") {
		flags = append(flags, "help")
	}
	return flags
}

// cmdCompletion prints a completion script for bash, zsh or fish.
func cmdCompletion(e *env, args []string) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(e.stdout, completionHelp)
		return nil
	}
	if len(args) != 1 {
		return cmdLineError("completion", errors.New("name one shell: bash, zsh or fish"))
	}
	t, ok := completionScripts[args[0]]
	if !ok {
		return cmdLineError("completion", fmt.Errorf("unknown shell %q: want bash, zsh or fish", args[0]))
	}
	var b bytes.Buffer
	if err := t.Execute(&b, completionCommands()); err != nil {
		return fmt.Errorf("completion %s: %w", args[0], err)
	}
	_, err := io.Copy(e.stdout, &b)
	return err
}

const completionHelp = `Usage: mqplan completion bash|zsh|fish

Prints a script that completes mqplan's commands, their flags and file names.

Examples:
  source <(mqplan completion bash)                          # this bash session
  mqplan completion bash > /etc/bash_completion.d/mqplan     # every bash
  mqplan completion zsh > "${fpath[1]}/_mqplan"              # zsh (then compinit)
  mqplan completion fish > ~/.config/fish/completions/mqplan.fish
`

// quoting are the template functions that quote text for each shell, so
// that a summary such as "emqtt-bench's commands" cannot end a string.
var quoting = template.FuncMap{
	// shq quotes for sh, bash and zsh: inside '...' nothing is special
	// but the quote itself, written '\''.
	"shq": func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" },
	// zshdesc escapes the colon that separates _describe's name from its
	// description.
	"zshdesc": func(s string) string { return strings.ReplaceAll(s, ":", `\:`) },
	// fishq quotes for fish: inside '...' only \ and ' are special.
	"fishq": func(s string) string {
		return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
	},
}

// completionScripts are the scripts, one template per shell, filled with
// completionCommands.
var completionScripts = map[string]*template.Template{
	"bash": template.Must(template.New("bash").Funcs(quoting).Parse(`# bash completion for mqplan: source <(mqplan completion bash)
_mqplan() {
    local cur=${COMP_WORDS[COMP_CWORD]} flags=""
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=( $(compgen -W "{{range .}}{{.Name}} {{end}}" -- "$cur") )
        return
    fi
    case ${COMP_WORDS[1]} in
    completion) COMPREPLY=( $(compgen -W "bash zsh fish" -- "$cur") ); return ;;
{{- range .}}{{if .Flags}}
    {{.Name}}) flags="{{range .Flags}}--{{.}} {{end}}" ;;
{{- end}}{{end}}
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=( $(compgen -W "$flags" -- "$cur") )
    else
        COMPREPLY=( $(compgen -f -- "$cur") )
    fi
}
complete -o filenames -F _mqplan mqplan
`)),
	"zsh": template.Must(template.New("zsh").Funcs(quoting).Parse(`#compdef mqplan
# zsh completion for mqplan: mqplan completion zsh > "${fpath[1]}/_mqplan"
_mqplan() {
    local -a commands
    commands=(
{{- range .}}
        {{shq (print .Name ":" (zshdesc .Summary))}}
{{- end}}
    )
    if (( CURRENT == 2 )); then
        _describe 'command' commands
        return
    fi
    local -a flags
    case ${words[2]} in
    completion) compadd bash zsh fish; return ;;
{{- range .}}{{if .Flags}}
    {{.Name}}) flags=({{range .Flags}}--{{.}} {{end}}) ;;
{{- end}}{{end}}
    esac
    if [[ ${words[CURRENT]} == -* ]]; then
        compadd -a flags
    else
        _files
    fi
}
compdef _mqplan mqplan
`)),
	"fish": template.Must(template.New("fish").Funcs(quoting).Parse(`# fish completion for mqplan: mqplan completion fish > ~/.config/fish/completions/mqplan.fish
complete -c mqplan -f
complete -c mqplan -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'
{{- range .}}
complete -c mqplan -n __fish_use_subcommand -a {{.Name}} -d {{fishq .Summary}}
{{- end}}
{{- range $c := .}}{{range .Flags}}
complete -c mqplan -n '__fish_seen_subcommand_from {{$c.Name}}' -l {{.}}
{{- end}}{{if $c.Flags}}
complete -c mqplan -n '__fish_seen_subcommand_from {{$c.Name}}' -F
{{- end}}{{end}}
`)),
}
