package auth

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.json")
	a, err := NewAuthenticator(path, []string{"viewer=static-secret-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := a.Check("static-secret-0123456789"); !ok || id.Role != RoleViewer {
		t.Fatalf("static token: %+v %v", id, ok)
	}
	secret, err := Create(path, "ci", RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v, %v", fi.Mode(), err)
	}
	if err := a.reload(true); err != nil {
		t.Fatal(err)
	}
	if id, ok := a.Check(secret); !ok || id.Role != RoleOperator || id.Name != "ci" {
		t.Fatalf("file token: %+v %v", id, ok)
	}
	for _, wrong := range []string{"", secret + "x", strings.ToUpper(secret), "static-secret-012345678"} {
		if _, ok := a.Check(wrong); ok {
			t.Fatalf("accepted %q", wrong)
		}
	}
	if err := Revoke(path, "ci"); err != nil {
		t.Fatal(err)
	}
	a.reload(true)
	if _, ok := a.Check(secret); ok {
		t.Fatal("a revoked token was accepted")
	}
	// A broken file fails closed: configured, and no token of it works.
	os.WriteFile(path, []byte("{broken"), 0o600)
	b, _ := NewAuthenticator(path, nil)
	if b != nil {
		t.Fatal("a broken token file was accepted at start")
	}
	a.reload(true)
	if !a.Configured() {
		t.Fatal("a broken token file made the server open")
	}
}

func TestStaticTokenSyntax(t *testing.T) {
	for _, bad := range []string{"admin", "admin=", "root=0123456789abcdef", "admin=short"} {
		if _, err := NewAuthenticator("", []string{bad}); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	if _, err := Create(filepath.Join(t.TempDir(), "t.json"), "bad name", RoleAdmin); err == nil {
		t.Error("accepted a name with a space")
	}
}

func TestRoles(t *testing.T) {
	if !RoleAdmin.Allows(RoleOperator) || !RoleOperator.Allows(RoleViewer) || RoleViewer.Allows(RoleOperator) || RoleNone.Allows(RoleViewer) {
		t.Fatal("role order is wrong")
	}
	if r, err := ParseRole("Operator"); err != nil || r != RoleOperator {
		t.Fatalf("ParseRole: %v %v", r, err)
	}
}

// TestBrokenFileIsLogged: a token file that breaks while the server runs
// is said on the log once, with the reason, and so is its repair.
func TestBrokenFileIsLogged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.json")
	secret, err := Create(path, "ci", RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAuthenticator(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	a.SetLogger(slog.New(slog.NewTextHandler(&buf, nil)))
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("{broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		a.reload(true)
	}
	if _, ok := a.Check(secret); ok {
		t.Fatal("a token of a broken file was accepted")
	}
	if n := strings.Count(buf.String(), "level=ERROR"); n != 1 || !strings.Contains(buf.String(), "tokens.json") {
		t.Fatalf("want one error naming the file, have:\n%s", buf.String())
	}
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	a.reload(true)
	if _, ok := a.Check(secret); !ok {
		t.Fatal("the repaired file's token was refused")
	}
	if !strings.Contains(buf.String(), "can be read again") {
		t.Fatalf("the repair was not logged:\n%s", buf.String())
	}
}
