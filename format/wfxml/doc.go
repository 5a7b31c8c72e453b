// Package wfxml imports Sarasvati process definition files (*.wf.xml) into
// Veena's graph model.
//
// Loading a file has two steps. Parse reads one file with a streaming,
// strict XML decoder, checks its syntax and structure against the
// ProcessDefinition schema and returns a Document that remembers where every
// element was. Compile then composes the document into one graph.Graph: every
// <external> instance is resolved to the latest loaded graph of that name and
// its nodes and arcs are copied into the new graph. Load does both. A Loader
// adds the results to a graph.Repository, one file at a time or a whole
// directory in dependency order.
//
// Every problem is reported as a *graph.LoadError listing each problem with
// its line and column. Hostile input is refused before it costs memory: DTDs
// (and so entity definitions) are not allowed, and files, tags, text,
// nesting depth and node and arc counts are limited (see Option).
//
// # The composed graph
//
// Nodes: the definition's own nodes in document order, then, instance by
// instance in document order, a clone of every node of the instance's graph
// in that graph's node order. Each clone has External set to its instance; a
// clone of a node that graph had itself imported has Originating set to that
// node. Clones keep their Pos, which is a position in their own definition's
// file (Graph.File of the external's graph).
//
// Arcs, in three parts, each in document order:
//
//  1. the arcs of the definition's own nodes (node by node, arc by arc);
//  2. the arcs declared inside <external> elements (external by external);
//  3. the arcs copied from the instances' graphs, instance by instance in
//     document order, each in that graph's arc order.
//
// A node's out-arcs and in-arcs follow this order, so an imported node lists
// the arcs declared on its <external> before the arcs it had in its own
// definition.
//
// Through an instance only the own nodes of its definition (not the nodes that
// definition imported) can be named. Only the definition's own isStart nodes
// start the composite.
//
// # Hash
//
// Graph.Hash is the hex SHA-256 of the file's bytes followed by, for each
// <external> in document order, its instance name, its definition name and the
// Hash of the graph it resolved to. A definition therefore counts as changed
// when any definition it composes changed.
package wfxml
