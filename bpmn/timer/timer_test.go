package timer

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

func TestTimers(t *testing.T) {
	cases := []struct {
		kind          Kind
		text          string
		first, second time.Time
		repeat        int
	}{
		{Date, "2026-12-01T08:00:00Z", time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC), time.Time{}, 0},
		{Date, "2026-12-01T09:00:00+01:00", time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC), time.Time{}, 0},
		{Duration, "PT15S", t0.Add(15 * time.Second), time.Time{}, 0},
		{Duration, "P14DT1H30M", t0.Add(14*24*time.Hour + 90*time.Minute), time.Time{}, 0},
		{Duration, "P1M", time.Date(2026, 12, 25, 10, 0, 0, 0, time.UTC), time.Time{}, 0},
		{Cycle, "R3/PT10M", t0.Add(10 * time.Minute), t0.Add(20 * time.Minute), 3},
		{Cycle, "R/P1D", t0.Add(24 * time.Hour), t0.Add(48 * time.Hour), -1},
		{Cycle, "R2/2027-04-27T17:20:00Z/P1D", time.Date(2027, 4, 27, 17, 20, 0, 0, time.UTC), time.Date(2027, 4, 28, 17, 20, 0, 0, time.UTC), 2},
		{Cycle, "0 0 9-17 * * MON-FRI", time.Date(2026, 11, 25, 11, 0, 0, 0, time.UTC), time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC), -1},
		{Cycle, "0 15 10 ? * *", time.Date(2026, 11, 25, 10, 15, 0, 0, time.UTC), time.Date(2026, 11, 26, 10, 15, 0, 0, time.UTC), -1},
		{Cycle, "*/5 * * * *", t0.Add(5 * time.Minute), t0.Add(10 * time.Minute), -1},
	}
	for _, c := range cases {
		tm, err := Parse(c.kind, c.text)
		if err != nil {
			t.Errorf("%s %q: %v", c.kind, c.text, err)
			continue
		}
		first := tm.First(t0)
		if !first.Equal(c.first) {
			t.Errorf("%q first %v, want %v", c.text, first, c.first)
		}
		next, ok := tm.Next(first)
		if ok != !c.second.IsZero() || (ok && !next.Equal(c.second)) {
			t.Errorf("%q next %v %v, want %v", c.text, next, ok, c.second)
		}
		if c.kind == Cycle && tm.Repeat != c.repeat {
			t.Errorf("%q repeats %d, want %d", c.text, tm.Repeat, c.repeat)
		}
	}
	for kind, texts := range map[Kind][]string{
		Date:     {"tomorrow", "2026-13-01T00:00:00Z", "2026-01-01T00:00:00@Europe/Berlin"},
		Duration: {"P", "PT", "10 minutes", "PT1H1H", "P1.5Y"},
		Cycle:    {"R3", "Rx/PT1M", "R/PT0S", "0 0 0 1 1 ? 2030", "every day"},
	} {
		for _, text := range texts {
			if _, err := Parse(kind, text); err == nil {
				t.Errorf("%s %q parses", kind, text)
			}
		}
	}
}
