package feel

import (
	"fmt"
	"strings"
	"time"

	"github.com/veena-wf/veena/expr"
)

// timeOfDay is a FEEL time: a time of day, kept as the offset from midnight.
type timeOfDay struct{ d time.Duration }

// parseTemporal reads the text of @"…" or of date(), time(), date and
// time() and duration() with one string argument.
func parseTemporal(s string) (any, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "P") || strings.HasPrefix(s, "-P") {
		return expr.ParseDuration(s)
	}
	if len(s) >= 5 && s[2] == ':' {
		return parseTime(s)
	}
	return expr.ParseDateTime(s)
}

func parseTime(s string) (timeOfDay, error) {
	for _, layout := range []string{"15:04:05.999999999Z07:00", "15:04:05.999999999", "15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			t = t.UTC()
			return timeOfDay{time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute +
				time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())}, nil
		}
	}
	return timeOfDay{}, fmt.Errorf("%q is not a time", s)
}
