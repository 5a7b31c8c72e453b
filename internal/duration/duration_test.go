package duration

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	base := time.Date(2026, 1, 31, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Time
	}{
		{"90s", base.Add(90 * time.Second)},
		{"1h30m", base.Add(90 * time.Minute)},
		{"PT90S", base.Add(90 * time.Second)},
		{"PT1H30M", base.Add(90 * time.Minute)},
		{"PT0.5S", base.Add(500 * time.Millisecond)},
		{"P2DT4H", base.AddDate(0, 0, 2).Add(4 * time.Hour)},
		{"P1M", base.AddDate(0, 1, 0)},
		{"P1Y2M3D", base.AddDate(1, 2, 3)},
		{"P3W", base.AddDate(0, 0, 21)},
		{"pt5m", base.Add(5 * time.Minute)},
		{"0s", base},
	} {
		d, err := Parse(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got := d.AddTo(base); !got.Equal(c.want) {
			t.Errorf("%s: %v + d = %v, want %v", c.in, base, got, c.want)
		}
	}
	for _, bad := range []string{"", "P", "PT", "P1", "P1H", "PT1D", "P1.5D", "PT1H1H", "-5s", "5", "P-1D", "PT1X", "PTT1H", "P99999999D", "soon"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if _, err := ParseFixed("P1D"); err == nil {
		t.Error("ParseFixed took a day")
	}
	if d, err := ParseFixed("PT24H"); err != nil || d != 24*time.Hour {
		t.Errorf("ParseFixed(PT24H) = %v, %v", d, err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"90s", "PT1H30M", "P1Y2M3DT4H5M6.5S", "P3W", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			return
		}
		if d.Clock < 0 || d.Years < 0 || d.Months < 0 || d.Days < 0 {
			t.Fatalf("%q: negative %+v", s, d)
		}
		_ = d.AddTo(time.Unix(0, 0))
	})
}
