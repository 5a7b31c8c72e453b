package schema_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/veena-wf/veena/format/schema"
	"github.com/veena-wf/veena/graph"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current output")

// TestGolden compiles every file of testdata/valid and compares the
// compiled form with the .golden file beside it.
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/valid/*")
	n := 0
	for _, file := range files {
		if strings.HasSuffix(file, ".golden") {
			continue
		}
		n++
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			gs, err := schema.Load(filepath.Base(file), src)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			got := schema.Describe(gs)
			golden := file + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("compiled form differs from %s (-want +got):\n%s", golden, diff)
			}
		})
	}
	if n == 0 {
		t.Fatal("no test files in testdata/valid")
	}
}

// TestJSONAndYAMLAgree: the chat-bot of the reference, written in JSON and
// in YAML, compiles to the same graphs (positions aside).
func TestJSONAndYAMLAgree(t *testing.T) {
	load := func(name string) string {
		src, err := os.ReadFile(filepath.Join("testdata/valid", name))
		if err != nil {
			t.Fatal(err)
		}
		gs, err := schema.Load(name, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gs {
			for _, n := range g.Nodes {
				n.Pos = graph.Pos{}
			}
		}
		return schema.Describe(gs)
	}
	if diff := cmp.Diff(load("order-status-bot.json"), load("order-status-bot.yaml")); diff != "" {
		t.Errorf("JSON and YAML differ (-json +yaml):\n%s", diff)
	}
}

// TestInvalid loads every file of testdata/invalid: each must fail, and
// its problems (line:column: message) must be those of the .errors file.
func TestInvalid(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid/*")
	n := 0
	for _, file := range files {
		if strings.HasSuffix(file, ".errors") {
			continue
		}
		n++
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			_, err = schema.Load(filepath.Base(file), src)
			var le *graph.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("want a *graph.LoadError, got %v", err)
			}
			got := err.Error() + "\n"
			golden := file + ".errors"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("problems differ from %s (-want +got):\n%s", golden, diff)
			}
		})
	}
	if n == 0 {
		t.Fatal("no test files in testdata/invalid")
	}
}
