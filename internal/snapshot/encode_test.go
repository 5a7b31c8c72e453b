package snapshot

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
)

var perfT0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func randomEnv(r *rand.Rand) *kernel.Env {
	e := kernel.NewEnv()
	keys := []string{"a", "b", "zz", "x<y>", "a&b", "ü", "q\"uote", "tab\t", ""}
	vals := []kernel.Value{kernel.String("s"), kernel.String("<html> & \"quotes\" \\ ü \u2028 \x01"), kernel.Int(-42),
		kernel.Int(1 << 60), kernel.Float(1.5), kernel.Float(3), kernel.Float(1e-9), kernel.Float(2e21), kernel.Bool(true),
		kernel.Bool(false), kernel.Date(perfT0), kernel.String("")}
	for range r.IntN(4) {
		e.Set(keys[r.IntN(len(keys))], vals[r.IntN(len(vals))])
	}
	return e
}

func randomTime(r *rand.Rand) int64 {
	switch r.IntN(4) {
	case 0:
		return 0
	case 1:
		return perfT0.UnixNano()
	default:
		return perfT0.Add(time.Duration(r.Int64N(1<<40) - (1 << 30))).UnixNano()
	}
}

// randomProcess builds a process with every snapshot field set at random
// (not a process the kernel could reach, but every field's encoding).
func randomProcess(r *rand.Rand) *kernel.Process {
	p := &kernel.Process{ID: "p", State: kernel.Executing, Env: randomEnv(r), CreatedAt: perfT0, Seq: r.Int64N(1000)}
	if r.IntN(5) == 0 {
		return p
	}
	for i := range r.IntN(4) {
		var env *kernel.Env
		if r.IntN(2) == 0 {
			env = randomEnv(r)
		}
		ts := kernel.NewTokenSet(i, []string{"set", "s<&>", "ü"}[r.IntN(3)], r.IntN(3), r.IntN(3), env)
		ts.MaxMemberIndex = r.IntN(5)
		for j := 0; j < ts.MemberEnv().Members(); j++ {
			if r.IntN(3) > 0 {
				ts.MemberEnv().Env(j).Import(randomEnv(r))
			}
		}
		p.TokenSets = append(p.TokenSets, ts)
	}
	sets := func() []kernel.Membership {
		if len(p.TokenSets) == 0 || r.IntN(2) == 0 {
			return nil
		}
		var out []kernel.Membership
		for range 1 + r.IntN(2) {
			out = append(out, kernel.Membership{Set: p.TokenSets[r.IntN(len(p.TokenSets))], Member: r.IntN(4)})
		}
		return out
	}
	shared := []*kernel.Env{randomEnv(r), randomEnv(r)}
	nodes := 1 + r.IntN(8)
	for i := range nodes {
		t := &kernel.NodeToken{ID: i, Seq: r.Int64N(100), CompleteSeq: r.Int64N(3) * r.Int64N(100), Node: &graph.Node{Index: r.IntN(20)},
			GuardAction: kernel.GuardAction(r.IntN(4)), ExecType: kernel.ExecutionType(r.IntN(4)), Complete: r.IntN(2) == 0,
			CreatedNs: randomTime(r), CompletedNs: randomTime(r), Sets: sets(), DelayUntilNs: randomTime(r), DelayCount: r.IntN(3),
			Work: kernel.WorkFlags(r.IntN(8))}
		switch r.IntN(4) {
		case 1:
			t.Env = randomEnv(r)
		case 2, 3:
			t.Env = shared[r.IntN(2)]
		}
		if r.IntN(3) == 0 {
			t.Notes = map[string]string{}
			for range 1 + r.IntN(3) {
				t.Notes[[]string{"k", "<a&b>", "ü", ""}[r.IntN(4)]] = []string{"v", "\"x\"", "12", "\u2028"}[r.IntN(4)]
			}
		}
		p.NodeTokens = append(p.NodeTokens, t)
	}
	for i := range r.IntN(10) {
		a := &kernel.ArcToken{ID: i, Seq: r.Int64N(100), Arc: &graph.Arc{Index: r.IntN(20)}, Parent: p.NodeTokens[r.IntN(nodes)],
			Pending: r.IntN(2) == 0, Complete: r.IntN(2) == 0, ExecType: kernel.ExecutionType(r.IntN(4)), Sets: sets(),
			CreatedNs: randomTime(r), CompletedNs: randomTime(r)}
		if r.IntN(3) > 0 {
			a.Child = p.NodeTokens[r.IntN(nodes)]
		}
		p.ArcTokens = append(p.ArcTokens, a)
		a.Parent.Children = append(a.Parent.Children, a)
		if a.Child != nil {
			a.Child.Parents = append(a.Child.Parents, a)
		}
	}
	for range r.IntN(3) {
		p.Listeners = append(p.Listeners, kernel.ListenerRef{Name: []string{"audit", "<l>"}[r.IntN(2)], Mask: kernel.EventMask(r.Uint32())})
	}
	return p
}

// The hand-written encoder writes what encoding/json writes.
func TestEncodeMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for i := range 3000 {
		p := randomProcess(r)
		want, err := encodeJSON(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendSnapshot(nil, p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want, got) {
			t.Fatalf("process %d:\nencoding/json  %s\nappendSnapshot %s", i, want, got)
		}
		// The binary snapshot decodes to what the JSON one decodes to.
		var fromJSON snapshot
		if err := json.Unmarshal(want, &fromJSON); err != nil {
			t.Fatal(err)
		}
		bin, err := appendBinary(nil, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(bin) > len(want) {
			t.Fatalf("process %d: binary snapshot of %d bytes, JSON of %d", i, len(bin), len(want))
		}
		fromBinary, err := decodeBinary(bin)
		if err != nil {
			t.Fatalf("process %d: %v", i, err)
		}
		if diff := cmp.Diff(fromJSON, fromBinary, cmp.Comparer(func(a, b kernel.Value) bool { return a == b })); diff != "" {
			t.Fatalf("process %d: decoded snapshots (-json +binary):\n%s", i, diff)
		}
		wantEnv, err := json.Marshal(p.Env.Map())
		if p.Env.Len() == 0 {
			wantEnv = []byte("{}")
		}
		if err != nil {
			t.Fatal(err)
		}
		gotEnv, err := EncodeEnv(p.Env)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(wantEnv, gotEnv) {
			t.Fatalf("env %d:\nencoding/json %s\nEncodeEnv     %s", i, wantEnv, gotEnv)
		}
	}
}

// Values encoding/json refuses fail both encoders.
func TestEncodeRefusesWhatEncodingJSONRefuses(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, where := range []string{"process", "token", "set", "member"} {
		p := randomProcess(r)
		for len(p.NodeTokens) == 0 || len(p.TokenSets) == 0 || p.TokenSets[0].MemberEnv().Members() == 0 {
			p = randomProcess(r)
		}
		bad := kernel.NewEnv()
		bad.Set("inf", kernel.Float(math.Inf(1)))
		switch where {
		case "process":
			p.Env = bad
			if _, err := EncodeEnv(p.Env); err == nil {
				t.Fatal("an infinite attribute encoded")
			}
			continue
		case "token":
			p.NodeTokens[0].Env = bad
		case "set":
			p.TokenSets[0].Env = bad
		case "member":
			p.TokenSets[0].MemberEnv().Env(0).Import(bad)
		}
		_, werr := encodeJSON(p)
		_, gerr := appendSnapshot(nil, p)
		_, berr := appendBinary(nil, p)
		if werr == nil || gerr == nil || berr == nil || werr.Error() != gerr.Error() || werr.Error() != berr.Error() {
			t.Fatalf("%s: encoding/json: %v, appendSnapshot: %v, appendBinary: %v", where, werr, gerr, berr)
		}
	}
}

// Damaged binary snapshots fail to decode; none panics.
func TestDecodeBinaryRejectsDamage(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for range 300 {
		p := randomProcess(r)
		b, err := appendBinary(nil, p)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < len(b); n++ {
			if _, err := decodeBinary(b[:n]); err == nil {
				t.Fatalf("a snapshot cut to %d of %d bytes decoded", n, len(b))
			}
		}
		if _, err := decodeBinary(append(b, 0)); err == nil {
			t.Fatal("a snapshot with a byte too many decoded")
		}
		for range 20 {
			c := bytes.Clone(b)
			c[1+r.IntN(len(c)-1)] = byte(r.Uint32())
			decodeBinary(c) // must not panic
		}
	}
	for _, bad := range [][]byte{{binaryTag, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}, {binaryTag, 2, 0x80}} {
		if _, err := decodeBinary(bad); err == nil {
			t.Fatalf("%x decoded", bad)
		}
	}
}

func BenchmarkEncodeRandom(b *testing.B) {
	r := rand.New(rand.NewPCG(15, 16))
	ps := make([]*kernel.Process, 64)
	for i := range ps {
		ps[i] = randomProcess(r)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		Encode(ps[i%len(ps)])
		i++
	}
}

func BenchmarkEncodeRandomFastJSON(b *testing.B) {
	r := rand.New(rand.NewPCG(15, 16))
	ps := make([]*kernel.Process, 64)
	for i := range ps {
		ps[i] = randomProcess(r)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		appendSnapshot(nil, ps[i%len(ps)])
		i++
	}
}

func BenchmarkEncodeRandomJSON(b *testing.B) {
	r := rand.New(rand.NewPCG(15, 16))
	ps := make([]*kernel.Process, 64)
	for i := range ps {
		ps[i] = randomProcess(r)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		encodeJSON(ps[i%len(ps)])
		i++
	}
}

// FuzzDecodeBinary: no stored bytes make the binary snapshot reader panic
// or hang; damaged ones are errors.
func FuzzDecodeBinary(f *testing.F) {
	r := rand.New(rand.NewPCG(19, 20))
	for range 8 {
		b, err := appendBinary(nil, randomProcess(r))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{binaryTag})
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeBinary(b)
	})
}
