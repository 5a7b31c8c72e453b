// Package schema reads schema definitions, the fourth format of Veena
// (seed 004): workflows written in JSON or YAML as nodes of five kinds
// (root, execution, event, timer, terminator) with ordered action lists and
// ordered, conditional connections, an initial almanac, context keys that
// route events to instances, a trigger that creates instances from events,
// and child schemas. Parse validates a file, reporting every problem with
// its line and column; Load compiles it and its children into graphs of
// the one graph model, whose nodes have the types the schema runtime
// (package github.com/veena-wf/veena/schema) registers on a kernel.
// Conditions and argument expressions are CEL, compiled here and run in a
// sandbox with a cost limit.
//
// The importer never runs and never stores anything.
package schema
