package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestParseTTL(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"", 0, ""},
		{"72h", 72 * time.Hour, ""},
		{"90m", 90 * time.Minute, ""},
		{"30d", 30 * 24 * time.Hour, ""},
		{"forever", -1, ""},
		{"Forever", -1, ""},
		{"0", 0, "above zero"},
		{"-1h", 0, "above zero"},
		{"-2d", 0, "above zero"},
		{"soon", 0, "want a duration such as 72h or 30d"},
		{"1.5d", 0, "want a duration such as 72h or 30d"},
		{"999999999d", 0, "want a duration such as 72h or 30d"},
	} {
		got, err := parseTTL(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("parseTTL(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("parseTTL(%q) = %v, %v; want an error saying %q", tc.in, got, err, tc.err)
		}
	}
}

// TestServeRefusesBadTTL: a bad --idempotency-ttl stops veena serve before
// it opens anything, with a message naming the flag.
func TestServeRefusesBadTTL(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"serve", "--db", "memory", "--idempotency-ttl", "soon"}, nil, &stdout, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), `--idempotency-ttl: "soon": want a duration such as 72h or 30d, or "forever"`) {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Fatalf("veena serve started: %q", stdout.String())
	}
}
