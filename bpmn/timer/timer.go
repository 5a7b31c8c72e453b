// Package timer reads BPMN timer definitions: an ISO 8601 date
// (timeDate), an ISO 8601 duration (timeDuration), and cycles (timeCycle):
// ISO 8601 repeating intervals (R5/PT10S, R/P1D forever,
// R3/2026-04-27T17:20:00Z/P1D with a start) and cron expressions (Spring
// and Quartz style, seconds first and optional; "?" as in Quartz).
package timer

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/veena-wf/veena/expr"
)

// Kind says how a timer is given.
type Kind string

// The kinds of timer.
const (
	Date     Kind = "date"
	Duration Kind = "duration"
	Cycle    Kind = "cycle"
)

// Timer is a parsed timer definition.
type Timer struct {
	Kind Kind
	// Date: the due time. Cycle with a start: the first due time.
	At time.Time
	// Duration and ISO cycles: the interval.
	Every expr.Duration
	// Cycles: how many times it fires; -1 forever.
	Repeat int
	cron   cron.Schedule
	text   string
}

var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse reads a timer of the given kind from its text.
func Parse(kind Kind, text string) (*Timer, error) {
	text = strings.TrimSpace(text)
	t := &Timer{Kind: kind, text: text}
	switch kind {
	case Date:
		at, err := expr.ParseDateTime(text)
		if err != nil {
			return nil, err
		}
		t.At = at
	case Duration:
		d, err := expr.ParseDuration(text)
		if err != nil {
			return nil, err
		}
		t.Every = d
	case Cycle:
		if strings.HasPrefix(text, "R") {
			return t, t.parseRepeat(text)
		}
		spec := strings.ReplaceAll(text, "?", "*")
		if n := len(strings.Fields(spec)); n > 6 {
			return nil, fmt.Errorf("cron %q: a year field is not supported", text)
		}
		s, err := cronParser.Parse(spec)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an ISO 8601 repeating interval (R3/PT10M) nor a cron expression: %w", text, err)
		}
		t.cron = s
		t.Repeat = -1
	default:
		return nil, fmt.Errorf("unknown timer kind %q", kind)
	}
	return t, nil
}

func (t *Timer) parseRepeat(text string) error {
	parts := strings.Split(text, "/")
	n := strings.TrimPrefix(parts[0], "R")
	t.Repeat = -1
	if n != "" {
		r, err := strconv.Atoi(n)
		if err != nil || r < 0 {
			return fmt.Errorf("%q: bad repetition count %q", text, parts[0])
		}
		t.Repeat = r
	}
	switch len(parts) {
	case 2:
		d, err := expr.ParseDuration(parts[1])
		if err != nil {
			return err
		}
		t.Every = d
	case 3:
		start, err := expr.ParseDateTime(parts[1])
		if err != nil {
			// R/PT1H/2026-01-01T00:00:00Z: an interval with an end is not supported.
			return fmt.Errorf("%q: want R[n]/start/duration or R[n]/duration: %w", text, err)
		}
		d, err := expr.ParseDuration(parts[2])
		if err != nil {
			return err
		}
		t.At, t.Every = start, d
	default:
		return fmt.Errorf("%q is not an ISO 8601 repeating interval (R3/PT10M)", text)
	}
	if t.Every.Months == 0 && t.Every.D <= 0 {
		return fmt.Errorf("%q: a cycle needs a positive interval", text)
	}
	return nil
}

// First is when the timer fires first, for a timer entered at now.
func (t *Timer) First(now time.Time) time.Time {
	switch t.Kind {
	case Date:
		return t.At
	case Duration:
		return t.Every.AddTo(now)
	}
	if t.cron != nil {
		return t.cron.Next(now)
	}
	if !t.At.IsZero() {
		return t.At
	}
	return t.Every.AddTo(now)
}

// Next is when a cycle fires after it fired at prev (its due time); ok
// is false for a timer that does not repeat.
func (t *Timer) Next(prev time.Time) (time.Time, bool) {
	if t.Kind != Cycle {
		return time.Time{}, false
	}
	if t.cron != nil {
		return t.cron.Next(prev), true
	}
	return t.Every.AddTo(prev), true
}

// String is the timer as written.
func (t *Timer) String() string { return t.text }
