// Package testutil holds what several of Veena's test packages share: building
// the veena command and the small definitions they load.
package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BuildVeena builds the veena command (cmd/veena of this module, with the
// console as it is in the working tree) into dir and returns the binary's
// path.
func BuildVeena(dir string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go command is needed to build veena: %w", err)
	}
	out, err := exec.Command(goTool, "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("cannot find the module root (go env GOMOD: %q, %v)", gomod, err)
	}
	bin := filepath.Join(dir, "veena")
	cmd := exec.Command(goTool, "build", "-o", bin, "./cmd/veena")
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/veena: %v\n%s", err, out)
	}
	return bin, nil
}

// Definitions several test packages load.
const (
	// DefAB is two wait nodes, A then B.
	DefAB = `<?xml version="1.0"?>
<process-definition name="ab" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" type="wait" isStart="true"><arc to="B"/></node>
  <node name="B" type="wait"/>
</process-definition>
`
	// DefSplit splits A into B and C, joined by an and join at D (all wait nodes).
	DefSplit = `<?xml version="1.0"?>
<process-definition name="split" xmlns="http://sarasvati.googlecode.com/ProcessDefinition">
  <node name="A" type="wait" isStart="true"><arc to="B"/><arc to="C"/></node>
  <node name="B" type="wait"><arc to="D"/></node>
  <node name="C" type="wait"><arc to="D"/></node>
  <node name="D" type="wait" joinType="and"/>
</process-definition>
`
)
