package rubric

import (
	"fmt"
	"time"
)

// Eval runs the program against env and returns its result. A nil env holds
// no names. An error from env is returned wrapped with the kind and name of
// the symbol being read, for example `predicate "isUrgent": unknown name`.
func (p *Program) Eval(env Env) (Value, error) {
	if env == nil {
		env = MapEnv{}
	}
	s := p.top()
	for s.kind == sIf {
		b, err := evalCond(s.cond, env)
		if err != nil {
			return Value{}, err
		}
		if b {
			s = s.then
		} else {
			s = s.els
		}
	}
	switch s.kind {
	case sAccept:
		return Value{Kind: KindGuard, Guard: GuardResult{Action: Accept}}, nil
	case sDiscard:
		return Value{Kind: KindGuard, Guard: GuardResult{Action: Discard}}, nil
	case sSkip:
		return Value{Kind: KindGuard, Guard: GuardResult{Action: Skip, ArcName: s.name}}, nil
	case sDelay:
		t, err := evalDate(&s.date, env)
		if err != nil {
			return Value{}, err
		}
		return Value{Kind: KindGuard, Guard: GuardResult{Action: Delay, Until: t}}, nil
	case sInt:
		return Value{Kind: KindInt, Int: s.num}, nil
	case sString:
		return Value{Kind: KindString, Str: s.name}, nil
	case sDate:
		t, err := evalDate(&s.date, env)
		if err != nil {
			return Value{}, err
		}
		return Value{Kind: KindDate, Date: t}, nil
	case sStrFunc:
		v, err := env.StringFunction(s.name)
		if err != nil {
			return Value{}, fmt.Errorf("string function %q: %w", s.name, err)
		}
		return Value{Kind: KindString, Str: v}, nil
	}
	panic("rubric: invalid program")
}

// EvalGuard runs the program and requires a guard result. Any other result
// is an error (wrapping ErrNotGuard) that says what was produced.
func (p *Program) EvalGuard(env Env) (GuardResult, error) {
	v, err := p.Eval(env)
	if err != nil {
		return GuardResult{}, err
	}
	if v.Kind != KindGuard {
		return GuardResult{}, fmt.Errorf("guard produced %s: %w", v, ErrNotGuard)
	}
	return v.Guard, nil
}

func evalCond(c *cond, env Env) (bool, error) {
	switch c.op {
	case cPred:
		b, err := env.Predicate(c.name)
		if err != nil {
			return false, fmt.Errorf("predicate %q: %w", c.name, err)
		}
		return b, nil
	case cNot:
		b, err := evalCond(c.args[0], env)
		return !b, err
	case cAnd:
		for _, x := range c.args {
			if b, err := evalCond(x, env); err != nil || !b {
				return false, err
			}
		}
		return true, nil
	case cOr:
		for _, x := range c.args {
			if b, err := evalCond(x, env); err != nil || b {
				return b && err == nil, err
			}
		}
		return false, nil
	}
	panic("rubric: invalid condition")
}

var unitSeconds = [...]int64{uSecond: 1, uMinute: 60, uHour: 3600}

func evalDate(d *dateSpec, env Env) (time.Time, error) {
	t, err := env.DateFunction(d.fn)
	if err != nil {
		return time.Time{}, fmt.Errorf("date function %q: %w", d.fn, err)
	}
	if !d.relative {
		return t, nil
	}
	n := d.offset // at most 32 bits, so the products below cannot overflow
	if d.before {
		n = -n
	}
	switch d.unit {
	case uDay:
		return t.AddDate(0, 0, int(n)), nil
	case uWeek:
		return t.AddDate(0, 0, 7*int(n)), nil
	}
	// An exact duration; whole seconds added to the Unix time, because
	// n hours as a time.Duration could overflow.
	return time.Unix(t.Unix()+n*unitSeconds[d.unit], int64(t.Nanosecond())).In(t.Location()), nil
}
