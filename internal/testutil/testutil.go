// Package testutil holds helpers that Veena's end-to-end tests share.
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
