package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mqplan/mqplan/plans"
)

// The run's shared secret (the token) authenticates a sharded run's
// coordinator connections and signs its parts (coord's package doc,
// partial/sign.go). It is read from a file, never from the command line,
// where every user of the machine sees it (ps):
//
//   - --token-file FILE, on mqplan run and mqplan merge;
//   - else the environment variable MQPLAN_TOKEN_FILE, naming the file;
//   - else the environment variable MQPLAN_TOKEN, holding the token itself
//     (how --workers hands its generated token to its children: a
//     process's environment is readable by its own user only).
const (
	envTokenFile = "MQPLAN_TOKEN_FILE"
	envToken     = "MQPLAN_TOKEN"
	// maxTokenFile bounds the file read: a token is a line, and a wrong
	// file (a log, a key store) is refused before it is read whole.
	maxTokenFile = 4096
	// minToken is the shortest token taken, surrounding white space
	// trimmed: 16 bytes of base64 carry 96 bits, beyond guessing.
	minToken = 16
	// tokenHowTo is how to make a token, for the refusals.
	tokenHowTo = "make one with: head -c 32 /dev/urandom | base64 > token"
)

// tokenFlag is --token-file.
type tokenFlag struct{ file string }

func (tf *tokenFlag) register(fs *flag.FlagSet, what string) {
	fs.StringVar(&tf.file, "token-file", "", what+" (or the environment variable "+envTokenFile+" naming the file, or "+envToken+" holding the token); "+tokenHowTo)
}

// token is the run's secret and where it came from (for messages: never
// the secret itself).
type token struct {
	secret []byte
	from   string
}

// load reads the token: from --token-file, else the environment; nil when
// none is given. An empty, short or oversized token is invalid input
// (exit 2), the message naming where it came from.
func (tf *tokenFlag) load(e *env) (*token, error) {
	if tf.file != "" {
		return readTokenFile(tf.file, "--token-file "+tf.file)
	}
	if f, ok := e.lookupEnv(envTokenFile); ok && f != "" {
		return readTokenFile(f, envTokenFile+"="+f)
	}
	if v, ok := e.lookupEnv(envToken); ok {
		return checkToken([]byte(v), envToken)
	}
	return nil, nil
}

func readTokenFile(path, from string) (*token, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, invalid(fmt.Errorf("%s: %w", from, err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return nil, invalid(fmt.Errorf("%s: %w", from, err))
	}
	if len(data) > maxTokenFile {
		return nil, invalid(fmt.Errorf("%s: larger than %d bytes: not a token (%s)", from, maxTokenFile, tokenHowTo))
	}
	return checkToken(data, from)
}

// checkToken trims the white space around a token (the newline a file
// ends with) and refuses an empty or short one.
func checkToken(b []byte, from string) (*token, error) {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0:
		return nil, invalid(fmt.Errorf("%s: the token is empty (%s)", from, tokenHowTo))
	case len(b) < minToken:
		return nil, invalid(fmt.Errorf("%s: the token has %d bytes, fewer than the %d it needs (%s)", from, len(b), minToken, tokenHowTo))
	}
	return &token{secret: b, from: from}, nil
}

// newWorkerToken is --workers' own token for its children: 32 random
// bytes, in base64 (a token is text: it passes through the environment).
func newWorkerToken() *token {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24 and later)
	return &token{secret: []byte(base64.StdEncoding.EncodeToString(b)), from: "--workers' own token"}
}

// loadOneProcess loads the plan of a run in one process: with --partial,
// its part is signed with the run's token when one is given; without,
// --token-file has nothing to do and is refused.
func (sf *shardFlags) loadOneProcess(e *env, pf *planFlags, path, runID, partialFile string) (*plans.Program, *partialRun, error) {
	if partialFile == "" {
		if sf.token.file != "" {
			return nil, nil, invalid(errors.New("--token-file: only with --shard (it authenticates the run's shards) or --partial (it signs the part)"))
		}
		prog, err := pf.load(e, path, runID)
		return prog, nil, err
	}
	prog, part, err := pf.loadForPartial(e, path, runID, partialFile)
	if err != nil {
		return nil, nil, err
	}
	if part.tok, err = sf.token.load(e); err != nil {
		return nil, nil, err
	}
	return prog, part, nil
}

// secretOf is a token's secret, nil for none.
func secretOf(t *token) []byte {
	if t == nil {
		return nil
	}
	return t.secret
}

// errNoToken is a coordinator bound beyond loopback without a token.
var errNoToken = errors.New("without a token the coordinator listens on loopback only: give every shard the run's token with --token-file FILE (or " + envTokenFile + "), " + tokenHowTo)
