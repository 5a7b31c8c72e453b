package expr

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseDuration reads an ISO 8601 duration: PnYnMnWnDTnHnMnS (any part
// may be left out, seconds may have a fraction, a leading "-" negates
// it), as BPMN timers and FEEL durations write them.
func ParseDuration(s string) (Duration, error) {
	orig := s
	s = strings.TrimSpace(s)
	neg := false
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	} else if strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	if len(s) < 2 || (s[0] != 'P' && s[0] != 'p') {
		return Duration{}, fmt.Errorf("%q is not an ISO 8601 duration (PnYnMnDTnHnMnS)", orig)
	}
	s = s[1:]
	var d Duration
	inTime := false
	seen := ""
	any := false
	for len(s) > 0 {
		if s[0] == 'T' || s[0] == 't' {
			if inTime {
				return Duration{}, fmt.Errorf("%q: two T designators", orig)
			}
			inTime = true
			s = s[1:]
			continue
		}
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == ',') {
			i++
		}
		if i == 0 || i == len(s) {
			return Duration{}, fmt.Errorf("%q is not an ISO 8601 duration", orig)
		}
		num := strings.ReplaceAll(s[:i], ",", ".")
		unit := s[i] | 0x20 // lower case
		s = s[i+1:]
		key := string(unit)
		if inTime {
			key = "t" + key
		}
		if strings.Contains(seen, key+";") {
			return Duration{}, fmt.Errorf("%q: a unit appears twice", orig)
		}
		seen += key + ";"
		any = true
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || f > 1e12 {
			return Duration{}, fmt.Errorf("%q: bad number %q", orig, num)
		}
		whole := f == math.Trunc(f)
		switch {
		case !inTime && unit == 'y' && whole:
			d.Months += int64(f) * 12
		case !inTime && unit == 'm' && whole:
			d.Months += int64(f)
		case !inTime && unit == 'w':
			d.D += time.Duration(f * float64(7*24*time.Hour))
		case !inTime && unit == 'd':
			d.D += time.Duration(f * float64(24*time.Hour))
		case inTime && unit == 'h':
			d.D += time.Duration(f * float64(time.Hour))
		case inTime && unit == 'm':
			d.D += time.Duration(f * float64(time.Minute))
		case inTime && unit == 's':
			d.D += time.Duration(f * float64(time.Second))
		default:
			return Duration{}, fmt.Errorf("%q is not an ISO 8601 duration (unit %c)", orig, s0(unit))
		}
	}
	if !any {
		return Duration{}, fmt.Errorf("%q is an empty ISO 8601 duration", orig)
	}
	if neg {
		d.Months, d.D = -d.Months, -d.D
	}
	return d, nil
}

func s0(b byte) rune { return rune(b) }

// ParseDateTime reads an ISO 8601 date and time (2026-01-02T10:00:00Z,
// with an offset, or with no zone: UTC) or a date alone (midnight UTC).
// Zone names (@Europe/Berlin) are not read: give an offset.
func ParseDateTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '@'); i >= 0 {
		zone := s[i+1:]
		if zone != "UTC" && zone != "Z" {
			return time.Time{}, fmt.Errorf("%q: zone names are not supported; give an offset such as +01:00", s)
		}
		s = s[:i] + "Z"
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02T15:04Z07:00", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an ISO 8601 date and time", s)
}
