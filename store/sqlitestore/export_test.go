package sqlitestore

// Queued is how many requests wait for the writer.
func (s *Store) Queued() int { return len(s.reqs) }

// Fallbacks is how many batches the writer ran again with a savepoint per
// request.
func (s *Store) Fallbacks() int64 { return s.fallbacks.Load() }
