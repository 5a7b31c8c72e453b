package veena

import "testing"

// TestDecodeOutcome reads the outcomes commands record, and the process
// records idempotency keys held before outcomes existed (whose "env" must
// not be taken for a token environment).
func TestDecodeOutcome(t *testing.T) {
	old := `{"id":"p1","definition":"split","version":1,"state":"executing","env":{"a":1},"parentToken":null,` +
		`"createdAt":"2026-11-22T07:09:49Z","updatedAt":"2026-11-22T07:09:49Z"}`
	o, err := decodeOutcome([]byte(old))
	if err != nil || o.Process == nil || o.Process.ID != "p1" || o.Process.Env["a"].String() != "1" || o.Env != nil {
		t.Fatalf("record from before outcomes: %+v, %v", o, err)
	}
	o, err = decodeOutcome([]byte(`{"process":{"id":"p2","state":"completed"},"env":{"m":"x"}}`))
	if err != nil || o.Process == nil || o.Process.ID != "p2" || o.Env["m"].String() != "x" {
		t.Fatalf("outcome with a token environment: %+v, %v", o, err)
	}
	o, err = decodeOutcome([]byte(`{"error":{"code":"token_complete","message":"done already"}}`))
	if err != nil || o.err() == nil || Code(o.err()) != "token_complete" {
		t.Fatalf("refusal: %+v, %v", o, err)
	}
	if o, err := decodeOutcome([]byte(`{"none":true}`)); err != nil || !o.None {
		t.Fatalf("nothing to do: %+v, %v", o, err)
	}
	for _, bad := range []string{`{}`, `[]`, `{"env":`, ``} {
		if o, err := decodeOutcome([]byte(bad)); err == nil {
			t.Fatalf("%q decoded as %+v", bad, o)
		}
	}
}
