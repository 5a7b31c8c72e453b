// Package pnml imports Petri nets written in the Petri Net Markup Language
// (ISO/IEC 15909-2) into Veena's graph model: place/transition nets as
// GreatSPN, TAPAAL, PIPE, Perpetuum and the Model Checking Contest write
// them.
//
// Parse reads one file: its nets, with pages flattened and reference
// places and transitions resolved to the nodes they stand for. It reads
// initial markings, capacities and arc inscriptions in ISO's
// <text>n</text>, PIPE's <value>Default,n</value> and SNAKES' forms,
// inhibitor arcs marked by a type attribute (TAPAAL) or a <type
// value="inhibitor"/> child (GreatSPN, PIPE, Perpetuum), names, ids and
// positions. Tool-specific blocks are skipped. What a P/T net cannot hold
// (coloured markings, time intervals, reset arcs, high-level
// declarations) is refused; what it reads in a narrower sense than its
// tool (an unknown arc type, a coloured multiset read as black tokens, a
// priority) it reports as a warning.
//
// Compile superposes the nets of one or several files, a bundle, into one
// graph.Graph: places (and transitions) with the same name are one node.
// It parses the names that are annotations (events and actions on
// transitions, activities on places, result codes on arcs; see
// petri/annotation) and generates the VAR:x lock places of binding
// arguments. Load does both for one file.
//
// Every problem is reported as a *graph.LoadError with its line and
// column. Hostile XML is refused before it costs memory (see
// internal/xmlguard): no DTDs or entities, and files, tags, texts, depth,
// elements, nodes and arcs are limited (see Option).
package pnml
