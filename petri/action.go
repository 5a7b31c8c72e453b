package petri

import (
	"fmt"
	"time"

	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/petri/annotation"
)

// Value is a variable's value.
type Value = kernel.Value

// Outcome is how an action ended.
type Outcome uint8

// The outcomes of an action: only Success changes anything; Failure leaves
// the net as it was; Defer tries the transition again after a delay.
const (
	Success Outcome = iota
	Failure
	Defer
)

func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	}
	return "defer"
}

// Result is what an action returns.
type Result struct {
	Outcome Outcome
	Delay   time.Duration // for Defer: how long to wait before trying again
	Message string        // for Failure: why (the incident says it)
}

// Succeed is the result of an action that did its work.
func Succeed() Result { return Result{Outcome: Success} }

// Fail is the result of an action that could not do its work; the
// transition does not fire.
func Fail(format string, args ...any) Result {
	return Result{Outcome: Failure, Message: fmt.Sprintf(format, args...)}
}

// DeferBy is the result of an action that asks to be tried again after d;
// the transition does not fire now.
func DeferBy(d time.Duration) Result { return Result{Outcome: Defer, Delay: d} }

// ActionFunc is a transactional action: it runs inside the step that fires
// its transition, must be quick, must not do I/O that cannot be undone
// (send through an outbox instead), and may change only its binding
// arguments, which are kept only if it returns Success.
type ActionFunc func(c *ActionCall) Result

// ActionCall is one call of an action.
type ActionCall struct {
	Process    string           // the net process
	Transition string           // the transition's id
	Call       *annotation.Call // the action as annotated
	Now        time.Time        // the step's time
	// Deferrals is how often this firing was deferred before this call;
	// FirstDeferred is when the first deferral was asked for (zero if
	// none), LastDelay the delay the previous deferral asked for.
	Deferrals     int
	FirstDeferred time.Time
	LastDelay     time.Duration
	// Event is the name of the event that fired the transition, "" when
	// it fires by itself or by command; EventArgs the event's arguments.
	Event     string
	EventArgs map[string]Value

	vars   map[string]Value // the variables as the action sees them
	writes map[string]*Value
}

// Arg returns the value of the variable an argument names, and whether the
// variable is set.
func (c *ActionCall) Arg(name string) (Value, bool) {
	if w, ok := c.writes[name]; ok {
		if w == nil {
			return Value{}, false
		}
		return *w, true
	}
	v, ok := c.vars[name]
	return v, ok
}

// Set writes a binding argument &name; it is kept only if the action
// returns Success. Writing a variable the action does not bind fails.
func (c *ActionCall) Set(name string, v Value) error {
	if !c.Call.Binds(name) {
		return fmt.Errorf("action %s does not bind %s (write it as &%s)", c.Call, name, name)
	}
	c.writes[name] = &v
	return nil
}

// Unset removes a binding argument's variable, if the action succeeds.
func (c *ActionCall) Unset(name string) error {
	if !c.Call.Binds(name) {
		return fmt.Errorf("action %s does not bind %s (write it as &%s)", c.Call, name, name)
	}
	c.writes[name] = nil
	return nil
}

// Actions finds the function of an action by name.
type Actions func(name string) (ActionFunc, bool)

// Builtins are the actions every engine has:
//
//	set(&x, y)   x := y (fails if y is not set)
//	unset(&x)    x is removed
//	inc(&n)      n := n + 1 (an unset n counts as 0; fails unless n is an integer)
//	dec(&n)      n := n - 1
//	pass()       succeeds and changes nothing
var Builtins = map[string]ActionFunc{
	"set": func(c *ActionCall) Result {
		if len(c.Call.Args) != 2 || !c.Call.Args[0].Bind || c.Call.Args[1].Bind {
			return Fail("set takes (&x, y)")
		}
		v, ok := c.Arg(c.Call.Args[1].Name)
		if !ok {
			return Fail("set: variable %s is not set", c.Call.Args[1].Name)
		}
		if err := c.Set(c.Call.Args[0].Name, v); err != nil {
			return Fail("%v", err)
		}
		return Succeed()
	},
	"unset": func(c *ActionCall) Result {
		if len(c.Call.Args) != 1 || !c.Call.Args[0].Bind {
			return Fail("unset takes (&x)")
		}
		if err := c.Unset(c.Call.Args[0].Name); err != nil {
			return Fail("%v", err)
		}
		return Succeed()
	},
	"inc": func(c *ActionCall) Result { return step(c, 1) },
	"dec": func(c *ActionCall) Result { return step(c, -1) },
	"pass": func(c *ActionCall) Result {
		return Succeed()
	},
}

func step(c *ActionCall, d int64) Result {
	if len(c.Call.Args) != 1 || !c.Call.Args[0].Bind {
		return Fail("%s takes (&n)", c.Call.Name)
	}
	name := c.Call.Args[0].Name
	v, ok := c.Arg(name)
	if ok && v.Kind() != kernel.KindInt {
		return Fail("%s: %s is a %s, not an integer", c.Call.Name, name, v.Kind())
	}
	if err := c.Set(name, kernel.Int(v.IntValue()+d)); err != nil {
		return Fail("%v", err)
	}
	return Succeed()
}
