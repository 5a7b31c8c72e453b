package docmatch

import (
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
