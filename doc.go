// Package veena is the public Go API of the Veena workflow engine: load
// process definitions, start processes, complete and backtrack their tokens,
// and read their token history and events, durably.
package veena
