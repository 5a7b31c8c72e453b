package testutil

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

var built struct {
	once sync.Once
	path string
	err  error
}

// Veena builds the veena command once per test binary (BuildVeena into a
// temporary directory) and returns its path; RemoveVeena, called from
// TestMain after the tests ran, removes it.
func Veena(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "veena-test-")
		if err != nil {
			built.err = err
			return
		}
		if built.path, built.err = BuildVeena(dir); built.err != nil {
			os.RemoveAll(dir)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// RemoveVeena removes what Veena built, if it built anything.
func RemoveVeena() {
	if built.path != "" {
		os.RemoveAll(filepath.Dir(built.path))
	}
}
