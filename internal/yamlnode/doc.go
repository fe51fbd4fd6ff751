// Package yamlnode is the YAML work under mqplan's plan loader that knows
// nothing of plans: parsing documents into yaml.v3 nodes without letting a
// parser panic escape, pinning a syntax error to the character at fault,
// copying a tree with its aliases and merge keys expanded under a node
// budget, and walking and editing a tree along a dotted path (the --set
// overrides). It owns the node-level mechanics only.
//
// It must not know the plan schema or word a plan problem: it reports what
// it found (a position, a [Problem] kind, a [PathError] kind) and plans
// turns that into the message the user reads, so that wording and
// redaction of secrets stay in one place. It imports go.yaml.in/yaml/v3
// and the standard library only.
//
// Every function here must hold on hostile input: no panic, and work
// bounded by the caller's limits (the document count of [Parse], the node
// budget of [Expander], the index limit of [ParsePath]).
package yamlnode
