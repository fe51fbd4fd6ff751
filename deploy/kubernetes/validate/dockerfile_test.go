package validate

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadDockerfile(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		env      []string // of the go build line, when it reads
		args     []string
		entry    []string
		wantErr  string
		finalUsr string
	}{
		{name: "a global ARG reaches FROM, not RUN",
			text: "ARG V=1\nARG IMG=golang\nFROM ${IMG}:1.26 AS build\nRUN A=${V} go build -o /o .\nFROM scratch\nENTRYPOINT [\"/o\"]\n",
			env:  []string{"A="}, args: []string{"build", "-o", "/o", "."}, entry: []string{"/o"}},
		{name: "an ARG redeclared in the stage takes the global default",
			text: "ARG V=1\nFROM golang AS build\nARG V\nRUN A=${V} go build -o /o .\nFROM scratch\nENTRYPOINT [\"/o\"]\n",
			env:  []string{"A=1"}, args: []string{"build", "-o", "/o", "."}, entry: []string{"/o"}},
		{name: "continuations, comments and quotes",
			text: "FROM golang AS build\n# a comment\nRUN CGO_ENABLED=0 go build \\\n  -ldflags=\"-s -w\" \\\n  -o /o .\nFROM scratch\nUSER 1:1\nENTRYPOINT [\"/o\", \"run\"]\n",
			env:  []string{"CGO_ENABLED=0"}, args: []string{"build", "-ldflags=-s -w", "-o", "/o", "."}, entry: []string{"/o", "run"}, finalUsr: "1:1"},
		{name: "shell syntax is refused",
			text: "FROM golang AS build\nRUN go mod download && go build -o /o .\nFROM scratch\nENTRYPOINT [\"/o\"]\n", wantErr: "shell syntax"},
		{name: "an instruction it does not read",
			text: "FROM scratch\nHEALTHCHECK NONE\n", wantErr: "HEALTHCHECK: an instruction these checks do not read"},
		{name: "the shell form of ENTRYPOINT",
			text: "FROM golang AS build\nRUN go build -o /o .\nFROM scratch\nENTRYPOINT /o\n", wantErr: "want the exec form"},
		{name: "no FROM", text: "ARG X=1\n", wantErr: "no FROM"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "Dockerfile")
			if err := os.WriteFile(name, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			d, err := ReadDockerfile(name)
			var env, args, entry []string
			if err == nil {
				env, args, err = d.GoBuild("build")
			}
			if err == nil {
				entry, err = d.Entrypoint()
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(env, tt.env) || !reflect.DeepEqual(args, tt.args) || !reflect.DeepEqual(entry, tt.entry) {
				t.Errorf("env %q args %q entrypoint %q, want %q %q %q", env, args, entry, tt.env, tt.args, tt.entry)
			}
			if d.Stages[0].Base != "golang" && d.Stages[0].Base != "golang:1.26" {
				t.Errorf("first stage FROM %q", d.Stages[0].Base)
			}
			if got := d.Final().Last("USER"); got != tt.finalUsr {
				t.Errorf("USER %q, want %q", got, tt.finalUsr)
			}
		})
	}
}
