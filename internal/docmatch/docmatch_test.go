package docmatch

import (
	"fmt"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	content := map[string]any{"type": "order", "total": int64(250), "lines": []any{map[string]any{"sku": "a"}}}
	for _, c := range []struct {
		src  string
		want bool
		err  string
	}{
		{`"orders" in collections`, true, ""},
		{`uri.startsWith("/orders/")`, true, ""},
		{`content.type == "order" && content.total > 100`, true, ""},
		{`size(content.lines) == 2`, false, ""},
		{`content.missing == 1`, false, "no such key"},
		{`content.total`, false, "not a boolean"},
	} {
		m, err := Compile(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		got, err := m.Match("/orders/17.json", []string{"orders", "new"}, content)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("%s: err %v, want %q", c.src, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Fatalf("%s: %v, %v; want %v", c.src, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "uri ==", "unknownName == 1", `uri + 1`, strings.Repeat("a", MaxSource+1)} {
		if _, err := Compile(bad); err == nil {
			t.Errorf("%q compiled", bad)
		}
	}
	// The cost limit stops a condition that loops over a large list.
	m, err := Compile(`content.xs.all(x, content.xs.all(y, x + y >= 0))`)
	if err != nil {
		t.Fatal(err)
	}
	xs := make([]any, 3000)
	for i := range xs {
		xs[i] = int64(i)
	}
	if _, err := m.Match("", nil, map[string]any{"xs": xs}); err == nil {
		t.Fatal("a condition over 9 million pairs ran to its end")
	}
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{`"orders" in collections`, `content.a.b == uri`, `size(collections) > 0 ? true : false`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		m, err := Compile(src)
		if err != nil {
			return
		}
		_, _ = m.Match("/x", []string{"c"}, map[string]any{"a": int64(1)})
	})
}

// TestCachedIsBounded compiles more distinct conditions than the cache
// holds: it keeps MaxCached of them, each still the right program, and a
// repeated condition is compiled once.
func TestCachedIsBounded(t *testing.T) {
	for i := range MaxCached + 500 {
		src := fmt.Sprintf("uri == 'doc-%d'", i)
		m, err := Cached(src)
		if err != nil {
			t.Fatal(err)
		}
		if m.Source() != src {
			t.Fatalf("Cached(%q) gave %q", src, m.Source())
		}
	}
	cache.Lock()
	n := len(cache.m)
	cache.Unlock()
	if n != MaxCached {
		t.Fatalf("the cache holds %d conditions; want %d", n, MaxCached)
	}
	a, _ := Cached("uri == 'again'")
	b, _ := Cached("uri == 'again'")
	if a != b {
		t.Fatal("a repeated condition was compiled again")
	}
	if ok, err := b.Match("again", nil, nil); err != nil || !ok {
		t.Fatalf("the cached condition: %v, %v", ok, err)
	}
	if _, err := Cached("uri +"); err == nil {
		t.Fatal("a condition that does not compile was accepted")
	}
}
