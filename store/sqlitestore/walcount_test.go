package sqlitestore_test

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/store/sqlitestore"
)

// These diagnostics count the WAL frames commands write by reading mxFrame,
// the number of valid frames, from the WAL index header (bytes 16-19 of
// the -shm file, in the machine's byte order: little-endian here).

// TestPerfWALFrames reports the WAL frames each command writes (set
// VEENA_PERF=1 to run it).
func TestPerfWALFrames(t *testing.T) {
	if os.Getenv("VEENA_PERF") == "" {
		t.Skip("set VEENA_PERF=1")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "f.db")
	if d := os.Getenv("VEENA_PERF_DIR"); d != "" {
		path = filepath.Join(d, "f.db")
		os.Remove(path)
		os.Remove(path + "-wal")
		os.Remove(path + "-shm")
	}
	st, err := sqlitestore.Open(path, sqlitestore.Options{Synchronous: "NORMAL", MaxBatch: 1})
	if err != nil {
		t.Fatal(err)
	}
	e, err := veena.Open(ctx, veena.Options{Store: st, CacheSize: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, _, err := e.LoadDefinition(ctx, "bench-wait.wf.xml", []byte(perfWaitXML), "sarasvati"); err != nil {
		t.Fatal(err)
	}
	size := func() int64 {
		b, err := os.ReadFile(path + "-shm")
		if err != nil {
			t.Fatal(err)
		}
		return int64(binary.LittleEndian.Uint32(b[16:]))
	}
	var startFrames, completeFrames, n int64
	for i := 0; i < 2000; i++ {
		s0 := size()
		p, err := e.StartProcess(ctx, veena.StartRequest{Definition: "bench-wait", Env: map[string]any{"client": "bench"}})
		if err != nil {
			t.Fatal(err)
		}
		s1 := size()
		if _, err := e.CompleteToken(ctx, p.ID+".n2", veena.CompleteRequest{}); err != nil {
			t.Fatal(err)
		}
		s2 := size()
		if s1 > s0 && s2 > s1 && i > 100 {
			startFrames += (s1 - s0)
			completeFrames += (s2 - s1)
			n++
		}
	}
	t.Logf("frames per start %.2f, per complete %.2f (%d samples)", float64(startFrames)/float64(n), float64(completeFrames)/float64(n), n)
}

// TestPerfWALPages lists the pages one start and one complete write (set
// VEENA_PERF=1 and VEENA_PERF_DIR to run it; the WAL is copied there).
func TestPerfWALPages(t *testing.T) {
	if os.Getenv("VEENA_PERF") == "" || os.Getenv("VEENA_PERF_DIR") == "" {
		t.Skip("set VEENA_PERF=1 and VEENA_PERF_DIR")
	}
	dir := os.Getenv("VEENA_PERF_DIR")
	ctx := context.Background()
	path := filepath.Join(dir, "p.db")
	for _, f := range []string{"", "-wal", "-shm"} {
		os.Remove(path + f)
	}
	st, err := sqlitestore.Open(path, sqlitestore.Options{Synchronous: "NORMAL", MaxBatch: 1})
	if err != nil {
		t.Fatal(err)
	}
	e, err := veena.Open(ctx, veena.Options{Store: st, CacheSize: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, _, err := e.LoadDefinition(ctx, "bench-wait.wf.xml", []byte(perfWaitXML), "sarasvati"); err != nil {
		t.Fatal(err)
	}
	mx := func() int64 {
		b, err := os.ReadFile(path + "-shm")
		if err != nil {
			t.Fatal(err)
		}
		return int64(binary.LittleEndian.Uint32(b[16:]))
	}
	var ids []string
	for i := 0; i < 400; i++ {
		p, err := e.StartProcess(ctx, veena.StartRequest{Definition: "bench-wait", Env: map[string]any{"client": "bench"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
		if len(ids) > 8 {
			if _, err := e.CompleteToken(ctx, ids[0]+".n2", veena.CompleteRequest{}); err != nil {
				t.Fatal(err)
			}
			ids = ids[1:]
		}
	}
	var marks []int64
	m0 := mx()
	for i := 0; i < 30; i++ {
		p, err := e.StartProcess(ctx, veena.StartRequest{Definition: "bench-wait", Env: map[string]any{"client": "bench"}})
		if err != nil {
			t.Fatal(err)
		}
		marks = append(marks, mx())
		ids = append(ids, p.ID)
		if _, err := e.CompleteToken(ctx, ids[0]+".n2", veena.CompleteRequest{}); err != nil {
			t.Fatal(err)
		}
		ids = ids[1:]
		marks = append(marks, mx())
	}
	wal, err := os.ReadFile(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	pageSize := int64(binary.BigEndian.Uint32(wal[8:]))
	prev := m0
	for i, m := range marks {
		if m < prev {
			prev = 0
		}
		var pages []uint32
		for f := prev; f < m; f++ {
			off := 32 + f*(24+pageSize)
			pages = append(pages, binary.BigEndian.Uint32(wal[off:]))
		}
		kind := "start"
		if i%2 == 1 {
			kind = "complete"
		}
		t.Logf("%s: %v", kind, pages)
		prev = m
	}
}
