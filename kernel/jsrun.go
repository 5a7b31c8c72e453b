package kernel

import (
	"time"

	"modernc.org/quickjs"
)

// EvalJavaScript evaluates JavaScript for a node type of another format (a
// BPMN script task, say) in a fresh QuickJS realm, bounded as script nodes
// are: by Kernel.ScriptMemory, by Kernel.ScriptTimeout and by the command's
// Interrupt. The programs run in turn in the one realm, which is thrown
// away afterwards; the result is the value of the last, as quickjs gives it
// (use JSON.stringify in it to take out objects). A program that fails, or
// goes beyond a limit, gives an error that says which; an interrupted
// command fails (Engine.Fail) with the interruption's error.
func (e *Engine) EvalJavaScript(programs ...string) (any, error) {
	if stop := e.stop.Load(); stop != nil {
		e.Fail(*stop)
	}
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, err
	}
	defer func() {
		vm.SetMemoryLimit(^uintptr(0)) // so that freeing the realm cannot fail
		_ = vm.Close()
	}()
	vm.SetMaxStackSize(20000)
	mem := e.k.ScriptMemory
	if mem <= 0 {
		mem = DefaultScriptMemory
	}
	vm.SetMemoryLimit(uintptr(mem))
	timeout := e.k.ScriptTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	_ = vm.SetEvalTimeout(timeout)
	rn := &running{stopFn: vm.Interrupt}
	e.script.Store(rn)
	defer func() {
		rn.end()
		e.script.Store(nil)
	}()
	began := time.Now()
	var v any
	for _, src := range programs {
		if v, err = vm.Eval(src, quickjs.EvalGlobal); err != nil {
			break
		}
	}
	if err == nil {
		return v, nil
	}
	if stop := e.stop.Load(); stop != nil {
		e.Fail(*stop)
	}
	return nil, scriptFailure(err, time.Since(began), timeout, mem)
}
