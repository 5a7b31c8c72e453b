// Package duration reads the durations Veena's API and definition files
// accept: Go durations ("90s", "1h30m") and ISO 8601 durations ("PT90S",
// "P2DT4H", "P1Y2M", "P3W"). An ISO duration with years, months, weeks or
// days is calendar arithmetic (AddTo adds them with time.AddDate); Fixed
// gives the length of one that has none.
package duration

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a parsed duration: calendar parts and a fixed part.
type Duration struct {
	Years, Months, Days int
	Clock               time.Duration
}

// maxPart bounds each number of an ISO duration, so that no sum overflows.
const maxPart = 1_000_000

// Parse reads a Go or ISO 8601 duration. Negative durations are refused.
func Parse(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Duration{}, errors.New("empty duration")
	}
	if s[0] == 'P' || s[0] == 'p' {
		return parseISO(s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return Duration{}, fmt.Errorf("duration %q: want a Go duration (90s, 1h30m) or ISO 8601 (PT90S, P2DT4H)", s)
	}
	if d < 0 {
		return Duration{}, fmt.Errorf("duration %q is negative", s)
	}
	return Duration{Clock: d}, nil
}

// ParseFixed reads a duration that has no calendar part (no years, months,
// weeks or days in ISO form, which have no fixed length): P1D is refused,
// PT24H is not.
func ParseFixed(s string) (time.Duration, error) {
	d, err := Parse(s)
	if err != nil {
		return 0, err
	}
	if d.Years != 0 || d.Months != 0 || d.Days != 0 {
		return 0, fmt.Errorf("duration %q has days, weeks, months or years, which have no fixed length here; use hours (PT24H)", s)
	}
	return d.Clock, nil
}

func parseISO(s string) (Duration, error) {
	bad := func(why string) (Duration, error) {
		return Duration{}, fmt.Errorf("ISO 8601 duration %q: %s", s, why)
	}
	var d Duration
	rest := strings.ToUpper(s[1:])
	if rest == "" {
		return bad("nothing after P")
	}
	inTime := false
	seen := ""
	any := false
	for rest != "" {
		if rest[0] == 'T' {
			if inTime {
				return bad("T twice")
			}
			inTime = true
			rest = rest[1:]
			if rest == "" {
				return bad("nothing after T")
			}
			continue
		}
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.' || rest[i] == ',') {
			i++
		}
		if i == 0 || i == len(rest) {
			return bad("want a number followed by a designator (Y, M, W, D, H, M, S)")
		}
		num, unit := strings.ReplaceAll(rest[:i], ",", "."), rest[i]
		rest = rest[i+1:]
		key := string(unit)
		if inTime {
			key = "T" + key
		}
		if strings.Contains(seen, key+"|") {
			return bad(fmt.Sprintf("%c given twice", unit))
		}
		seen += key + "|"
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || f < 0 || f > maxPart || math.IsNaN(f) {
			return bad(fmt.Sprintf("number %q out of range", num))
		}
		whole := f == math.Trunc(f)
		switch key {
		case "Y", "M", "W", "D":
			if !whole {
				return bad("only seconds, minutes and hours may have a fraction")
			}
			switch key {
			case "Y":
				d.Years = int(f)
			case "M":
				d.Months = int(f)
			case "W":
				d.Days += 7 * int(f)
			case "D":
				d.Days += int(f)
			}
		case "TH":
			d.Clock += time.Duration(f * float64(time.Hour))
		case "TM":
			d.Clock += time.Duration(f * float64(time.Minute))
		case "TS":
			d.Clock += time.Duration(f * float64(time.Second))
		default:
			return bad(fmt.Sprintf("unknown designator %c", unit))
		}
		any = true
	}
	if !any {
		return bad("no parts")
	}
	return d, nil
}

// AddTo returns t plus the duration (the calendar parts first).
func (d Duration) AddTo(t time.Time) time.Time {
	if d.Years != 0 || d.Months != 0 || d.Days != 0 {
		t = t.AddDate(d.Years, d.Months, d.Days)
	}
	return t.Add(d.Clock)
}

// IsZero reports whether the duration is nothing at all.
func (d Duration) IsZero() bool { return d == Duration{} }
