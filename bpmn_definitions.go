package veena

import (
	"context"
	"fmt"

	bpmnrun "github.com/veena-wf/veena/bpmn"
	"github.com/veena-wf/veena/format/bpmn"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/store"
)

// registerFormats adds the node types of the formats the engine runs to
// its kernel (once: a kernel given in Options may have them already).
func registerFormats(k *kernel.Kernel) {
	if !k.HasNodeType(bpmn.TypeStart) {
		bpmnrun.Register(k)
	}
}

// compileBPMN compiles a BPMN file into one graph per process it runs.
func compileBPMN(file string, src []byte) ([]*graph.Graph, error) {
	gs, err := bpmn.Load(file, src)
	if err != nil {
		return nil, definitionError(err)
	}
	return gs, nil
}

// compileStored compiles a stored definition again: for a file holding
// several processes, the graph of the stored one's name.
func (e *Engine) compileStored(d *store.Definition) (*graph.Graph, error) {
	if d.Format != bpmn.Format {
		return e.compile(d.File, d.Source, d.Format)
	}
	gs, err := compileBPMN(d.File, d.Source)
	if err != nil {
		return nil, err
	}
	for _, g := range gs {
		if g.Name == d.Name {
			return g, nil
		}
	}
	return nil, fmt.Errorf("the stored file of %s no longer holds process %s", d.Name, d.Name)
}

// loadBPMN stores each process of a BPMN file as a definition; the answer
// is the first one's, naming the others as related.
func (e *Engine) loadBPMN(ctx context.Context, file string, src []byte) (*Definition, bool, error) {
	gs, err := compileBPMN(file, src)
	if err != nil {
		return nil, false, err
	}
	var first *Definition
	anyCreated := false
	var related []string
	for i, g := range gs {
		stored, created, err := e.addGraph(ctx, g)
		if err != nil {
			return nil, false, err
		}
		anyCreated = anyCreated || created
		if i == 0 {
			first = definitionOf(stored)
		} else {
			related = append(related, stored.Name)
		}
	}
	first.Related = related
	return first, anyCreated, nil
}
