package veena

import (
	bpmnrun "github.com/veena-wf/veena/bpmn"
	"github.com/veena-wf/veena/format/bpmn"
	"github.com/veena-wf/veena/graph"
	"github.com/veena-wf/veena/kernel"
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
