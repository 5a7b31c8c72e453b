package schema_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/veena-wf/veena/format/schema"
)

// TestManyExpressions: a file whose expressions hold more than
// MaxExprTotal bytes is refused quickly, naming the limit.
func TestManyExpressions(t *testing.T) {
	expr := strings.Repeat("1+", 3999) + "1"
	var b strings.Builder
	b.WriteString(`{"schema":"s","nodes":[{"id":"r","type":"root","actions":[`)
	for i := range 100 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"id":"a` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `","do":"almanac.set","with":{"k":"=` + expr + `"}}`)
	}
	b.WriteString(`],"next":[{"to":"e"}]},{"id":"e","type":"terminator"}]}`)
	start := time.Now()
	_, err := schema.Load("many.json", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "expressions hold more than") {
		t.Fatalf("want the expression limit, got %v", err)
	}
	t.Logf("refused in %v", time.Since(start))
}

// TestBigFileLoadsFast: positions are found in time linear in the file, so
// that a large file on one line (up to MaxFileSize) loads quickly.
func TestBigFileLoadsFast(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"schema":"s","almanac":{`)
	for i := 0; b.Len() < schema.MaxFileSize-200; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + strconv.Itoa(i) + `":[1,2,3,"é"]`)
		if i > 150000 {
			break
		}
	}
	b.WriteString(`},"nodes":[]}`)
	start := time.Now()
	_, err := schema.Load("big.json", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "more than 200000 values") {
		t.Fatalf("want the value limit, got %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("a %d-byte file took %v", b.Len(), d)
	}
	t.Logf("%d bytes: %v", b.Len(), time.Since(start))
}

// TestBigYAMLLoads: a YAML file as large as allowed is read in reasonable
// time, and a larger one is refused at once, naming the limit.
func TestBigYAMLLoads(t *testing.T) {
	big := "schema: s\n" + strings.Repeat("# padding\n", schema.MaxYAMLSize/10+1)
	if _, err := schema.Load("big.yaml", []byte(big)); err == nil || !strings.Contains(err.Error(), "at most 262144") {
		t.Fatalf("a YAML file over the limit: %v", err)
	}
	var b strings.Builder
	b.WriteString("schema: s\nalmanac:\n")
	for i := 0; b.Len() < schema.MaxYAMLSize-200; i++ {
		b.WriteString("  k" + strconv.Itoa(i) + ": [1, 2, 3, \"é\"]\n")
	}
	b.WriteString("nodes: []\n")
	start := time.Now()
	_, err := schema.Load("big.yaml", []byte(b.String()))
	if err == nil {
		t.Fatal("a schema without nodes loaded")
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("a %d-byte YAML file took %v", b.Len(), d)
	}
	t.Logf("%d bytes: %v", b.Len(), time.Since(start))
}
