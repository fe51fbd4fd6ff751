package main

import (
	"fmt"
	"strings"

	"github.com/mqplan/mqplan/plans"
)

// cmdSchema prints the JSON Schema of plan files, for editors and for
// tools that check plans without mqplan.
func cmdSchema(e *env, args []string) error {
	fs := newFlags(e, "schema", "", "Prints the JSON Schema (draft 2020-12) of plan files, generated from the keys the\nloader accepts: editors with yaml-language-server complete and check a plan whose\nfirst line names it. The repository's copy is docs/mqplan-plan.schema.json.")
	args, done, err := parseFlags(fs, args)
	if done {
		return err
	}
	if len(args) > 0 {
		return cmdLineError(fs.Name(), fmt.Errorf("takes no arguments, got %s", strings.Join(args, " ")))
	}
	if _, err := e.stdout.Write(plans.Schema()); err != nil {
		return fmt.Errorf("writing the schema: %w", err)
	}
	return nil
}
