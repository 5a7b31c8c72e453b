package sqlstore

// Await waits for the answer to a request that a store handed to its
// writing goroutines: the answer on done, or closed once stopped is closed
// (the goroutines have stopped) and they did not answer the request before,
// which happens when it reached their queue after they emptied it.
func Await(done <-chan error, stopped <-chan struct{}, closed error) error {
	select {
	case err := <-done:
		return err
	case <-stopped:
		select {
		case err := <-done:
			return err
		default:
			return closed
		}
	}
}
