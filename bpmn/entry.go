package bpmn

import "github.com/veena-wf/veena/kernel"

// The kernel calls the node types through these: a failure of the step
// (fail) becomes an incident on its token (see guard).

func (a *activity) Execute(e *kernel.Engine, t *kernel.NodeToken) error {
	return guard(e, func() { must(e, a.execute(e, t)) })
}

func (a *activity) HandleComplete(e *kernel.Engine, t *kernel.NodeToken, names []string, vars *kernel.Env) error {
	return guard(e, func() { must(e, a.handleComplete(e, t, names, vars)) })
}

func (s *startNode) Execute(e *kernel.Engine, t *kernel.NodeToken) error {
	return guard(e, func() { must(e, s.execute(e, t)) })
}

func (n *endNode) Execute(e *kernel.Engine, t *kernel.NodeToken) error {
	return guard(e, func() { must(e, n.execute(e, t)) })
}

func (n *endNode) HandleComplete(e *kernel.Engine, t *kernel.NodeToken, names []string, vars *kernel.Env) error {
	return guard(e, func() { must(e, n.handleComplete(e, t, names, vars)) })
}

func (n *throwNode) Execute(e *kernel.Engine, t *kernel.NodeToken) error {
	return guard(e, func() { must(e, n.execute(e, t)) })
}

func (n *throwNode) HandleComplete(e *kernel.Engine, t *kernel.NodeToken, names []string, vars *kernel.Env) error {
	return guard(e, func() { must(e, n.handleComplete(e, t, names, vars)) })
}

func (n *catchNode) Guard(e *kernel.Engine, t *kernel.NodeToken) (res kernel.GuardResult, err error) {
	var inner error
	err = guardFails(func() { res, inner = n.guard(e, t) })
	if err == nil {
		err = inner
	}
	return res, err
}

func (n *catchNode) Execute(e *kernel.Engine, t *kernel.NodeToken) error {
	return guard(e, func() { must(e, n.execute(e, t)) })
}

func (n *catchNode) HandleComplete(e *kernel.Engine, t *kernel.NodeToken, names []string, vars *kernel.Env) error {
	return guard(e, func() { must(e, n.handleComplete(e, t, names, vars)) })
}

func (b *boundaryNode) Guard(e *kernel.Engine, t *kernel.NodeToken) (res kernel.GuardResult, err error) {
	var inner error
	err = guardFails(func() { res, inner = b.guard(e, t) })
	if err == nil {
		err = inner
	}
	return res, err
}

func (b *boundaryNode) Execute(e *kernel.Engine, t *kernel.NodeToken) error {
	return guard(e, func() { must(e, b.execute(e, t)) })
}

func (b *boundaryNode) HandleComplete(e *kernel.Engine, t *kernel.NodeToken, names []string, vars *kernel.Env) error {
	return guard(e, func() { must(e, b.handleComplete(e, t, names, vars)) })
}

func (s *eventSubProcess) Guard(e *kernel.Engine, t *kernel.NodeToken) (res kernel.GuardResult, err error) {
	var inner error
	err = guardFails(func() { res, inner = s.guard(e, t) })
	if err == nil {
		err = inner
	}
	return res, err
}

func (s *eventSubProcess) Execute(e *kernel.Engine, t *kernel.NodeToken) error {
	return guard(e, func() { must(e, s.execute(e, t)) })
}

func (s *eventSubProcess) HandleComplete(e *kernel.Engine, t *kernel.NodeToken, names []string, vars *kernel.Env) error {
	return guard(e, func() { must(e, s.handleComplete(e, t, names, vars)) })
}

func (g *gateway) Execute(e *kernel.Engine, t *kernel.NodeToken) error {
	return guard(e, func() { must(e, g.execute(e, t)) })
}

// must fails the command with a kernel error a node type's method returned.
func must(e *kernel.Engine, err error) {
	if err != nil {
		e.Fail(err)
	}
}

// guardFails turns a failure in a guard into the guard's error: a token
// whose guard fails is not active and cannot hold an incident, so the
// command fails and nothing changes.
func guardFails(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			inc, ok := r.(*incident)
			if !ok {
				panic(r)
			}
			err = &kernel.Error{Code: inc.code, Msg: inc.t.Node.Kind + " " + inc.t.Node.Name + ": " + inc.msg}
		}
	}()
	fn()
	return err
}
