package veena_test

import (
	"context"
	"strings"
	"testing"

	"github.com/veena-wf/veena"
	"github.com/veena-wf/veena/store/memstore"
)

// TestGuardNamesWhatIsUnset: a guard that reads an attribute nobody set
// fails with a message that names it, says what type it wants and how to
// set it; one of the wrong type says what it is.
func TestGuardNamesWhatIsUnset(t *testing.T) {
	ctx := context.Background()
	e := open(t, memstore.New(), veena.Options{})
	defer e.Close()
	for _, tc := range []struct {
		guard string
		env   map[string]any
		want  []string
	}{
		{"if bigAmount then Accept else Discard", nil,
			[]string{`guard of node B: predicate "bigAmount": not set`, "set bigAmount on the process", "bigAmount=true"}},
		{"delay until 1 day after dueDate", nil,
			[]string{`date function "dueDate": not set`, `dueDate={"date": "2026-05-01T08:00:00Z"}`}},
		{"if bigAmount then Accept else Discard", map[string]any{"bigAmount": "yes"},
			[]string{`predicate "bigAmount": the attribute is a string "yes", not a boolean (true or false)`}},
		{"delay until 1 day after dueDate", map[string]any{"dueDate": 3},
			[]string{`date function "dueDate": the attribute is an integer 3, not a date`}},
	} {
		src := `<?xml version="1.0"?>
<process-definition name="g" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" isStart="true"><arc to="B"/></node>
  <node name="B" type="wait"><guard>` + tc.guard + `</guard></node>
</process-definition>`
		if _, _, err := e.LoadDefinition(ctx, "g.wf.xml", []byte(src), ""); err != nil {
			t.Fatal(err)
		}
		_, err := e.StartProcess(ctx, veena.StartRequest{Definition: "g", Env: tc.env})
		if err == nil {
			t.Fatalf("%s with %v started", tc.guard, tc.env)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s with %v: %v\nwant %q in it", tc.guard, tc.env, err, w)
			}
		}
	}
}
