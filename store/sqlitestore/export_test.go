package sqlitestore

// Queued is how many requests wait for the writer.
func (s *Store) Queued() int { return len(s.reqs) }

// Fallbacks is how many batches the writer ran again with a savepoint per
// request.
func (s *Store) Fallbacks() int64 { return s.fallbacks.Load() }

// Restarts is how many times the writer's own checkpoint let the WAL start
// over from its beginning.
func (s *Store) Restarts() int64 { return s.restarts.Load() }

// TraceStatements calls fn with every statement the writers of every
// store run, until the returned function is called. Not for parallel tests.
func TraceStatements(fn func(q string)) (stop func()) {
	traceStatement = fn
	return func() { traceStatement = nil }
}
