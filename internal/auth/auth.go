// Package auth owns Veena's access tokens: the roles they grant, how they are
// stored (hashed, in a small JSON file written by `veena access-token`), and how a
// bearer token presented to the server is checked.
//
// A token is a random 32-byte secret shown once when it is created. Only its
// SHA-256 hash is stored; a presented token is hashed and compared with every
// stored hash in constant time.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/veena-wf/veena/internal/ident"
)

// Role is what a token allows. Each role includes the ones below it.
type Role int

// The roles, weakest first. RoleNone is no access at all.
const (
	RoleNone Role = iota
	// RoleViewer reads everything.
	RoleViewer
	// RoleOperator also starts, completes, backtracks and cancels processes
	// and changes environments.
	RoleOperator
	// RoleAdmin also loads definitions.
	RoleAdmin
)

var roleNames = [...]string{"none", "viewer", "operator", "admin"}

// String returns the role's name: none, viewer, operator or admin.
func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return "none"
}

// ParseRole reads a role name (viewer, operator, admin).
func ParseRole(s string) (Role, error) {
	for i, n := range roleNames {
		if i > 0 && strings.EqualFold(s, n) {
			return Role(i), nil
		}
	}
	return RoleNone, fmt.Errorf("unknown role %q (want viewer, operator or admin)", s)
}

// Allows reports whether r includes need.
func (r Role) Allows(need Role) bool { return r >= need }

// Entry is one stored token: its name (the user who acts with it), the
// groups that user is in, its role and the hex SHA-256 of the secret.
type Entry struct {
	Name      string    `json:"name"`
	Groups    []string  `json:"groups,omitempty"`
	Role      string    `json:"role"`
	Hash      string    `json:"hash"`
	CreatedAt time.Time `json:"createdAt"`
}

// File is the token file's content.
type File struct {
	Tokens []Entry `json:"tokens"`
}

// Hash returns the hex SHA-256 of a secret.
func Hash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// NewSecret makes a high-entropy token ("veena_" + 43 base64url characters).
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make token: %w", err)
	}
	return "veena_" + base64.RawURLEncoding.EncodeToString(b), nil
}

var nameForm = ident.New("A-Za-z0-9", "A-Za-z0-9._@-", 63)

// ReadFile reads a token file; a missing file is an empty one.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &File{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read token file: %w", err)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("read token file %s: %w", path, err)
	}
	for _, e := range f.Tokens {
		if _, err := ParseRole(e.Role); err != nil {
			return nil, fmt.Errorf("token file %s: token %q: %w", path, e.Name, err)
		}
	}
	return &f, nil
}

// WriteFile replaces the token file atomically, readable by its owner only.
func WriteFile(path string, f *File) error {
	sort.Slice(f.Tokens, func(i, j int) bool { return f.Tokens[i].Name < f.Tokens[j].Name })
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("write token file: %w", err)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".veena-tokens-*")
	if err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write token file: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write token file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	return nil
}

// Create adds a token to the file at path and returns its secret, which is
// not stored anywhere. The token acts as the user name, in groups.
func Create(path, name string, role Role, groups ...string) (string, error) {
	if !nameForm.Match(name) {
		return "", fmt.Errorf("token name %q: use 1-64 letters, digits, '.', '_', '@' or '-'", name)
	}
	groups, err := CleanGroups(groups)
	if err != nil {
		return "", err
	}
	if role == RoleNone {
		return "", errors.New("a token needs a role")
	}
	f, err := ReadFile(path)
	if err != nil {
		return "", err
	}
	for _, e := range f.Tokens {
		if e.Name == name {
			return "", fmt.Errorf("a token named %q already exists; revoke it first", name)
		}
	}
	secret, err := NewSecret()
	if err != nil {
		return "", err
	}
	f.Tokens = append(f.Tokens, Entry{Name: name, Groups: groups, Role: role.String(), Hash: Hash(secret), CreatedAt: time.Now().UTC().Truncate(time.Second)})
	if err := WriteFile(path, f); err != nil {
		return "", err
	}
	return secret, nil
}

// Revoke removes the named token from the file at path.
func Revoke(path, name string) error {
	f, err := ReadFile(path)
	if err != nil {
		return err
	}
	kept := f.Tokens[:0]
	found := false
	for _, e := range f.Tokens {
		if e.Name == name {
			found = true
			continue
		}
		kept = append(kept, e)
	}
	if !found {
		return fmt.Errorf("no token named %q in %s", name, path)
	}
	f.Tokens = kept
	return WriteFile(path, f)
}

// CleanGroups checks group names (as token names: letters, digits, '.',
// '_', '@', '-') and drops blanks and repeats.
func CleanGroups(groups []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, g := range groups {
		g = strings.TrimSpace(g)
		if g == "" || seen[g] {
			continue
		}
		if !nameForm.Match(g) {
			return nil, fmt.Errorf("group name %q: use 1-64 letters, digits, '.', '_', '@' or '-'", g)
		}
		seen[g] = true
		out = append(out, g)
	}
	return out, nil
}

// Identity is who a request comes from: the user (the token's name), the
// user's groups and the token's role.
type Identity struct {
	Name   string
	Groups []string
	Role   Role
}

// stored is a token the authenticator knows: its name, groups, role and hash.
type stored struct {
	name   string
	groups []string
	role   Role
	hash   [32]byte
}

// Authenticator checks bearer tokens against tokens given at start
// (role=secret) and the token file, which it re-reads when it changes, so
// that tokens created or revoked with the CLI take effect without a restart.
// It is safe for concurrent use.
type Authenticator struct {
	path   string
	static []stored

	mu       sync.Mutex
	fromFile []stored
	modTime  time.Time
	size     int64
	checked  time.Time
	fileErr  error
	log      *slog.Logger // told when the token file breaks and when it is read again
}

// SetLogger makes the authenticator say on log when the token file turns
// unreadable while the server runs (every token of it is refused from then
// on: it fails closed) and when it can be read again.
func (a *Authenticator) SetLogger(log *slog.Logger) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.log = log
}

// setFileErr records the token file's state and logs a change of it; the
// caller holds mu.
func (a *Authenticator) setFileErr(err error) {
	if a.log != nil {
		switch {
		case err != nil && (a.fileErr == nil || a.fileErr.Error() != err.Error()):
			a.log.Error("auth: the token file cannot be used; its tokens are refused until it is fixed", "err", err)
		case err == nil && a.fileErr != nil:
			a.log.Info("auth: the token file can be read again", "path", a.path)
		}
	}
	a.fileErr = err
}

// NewAuthenticator returns an authenticator over the token file at path
// ("" for none) and the static tokens given as ROLE=SECRET.
func NewAuthenticator(path string, static []string) (*Authenticator, error) {
	a := &Authenticator{path: path}
	for i, s := range static {
		role, secret, ok := strings.Cut(s, "=")
		if !ok || secret == "" {
			return nil, fmt.Errorf("access token %d: want ROLE=SECRET, e.g. admin=s3cret", i+1)
		}
		r, err := ParseRole(role)
		if err != nil {
			return nil, fmt.Errorf("access token %d: %w", i+1, err)
		}
		if len(secret) < 16 {
			return nil, fmt.Errorf("access token %d: a secret needs at least 16 characters", i+1)
		}
		a.static = append(a.static, stored{name: fmt.Sprintf("%s-%d", r, i+1), role: r, hash: sha256.Sum256([]byte(secret))})
	}
	if path != "" {
		if err := a.reload(true); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// reload re-reads the token file if it changed; it looks at most once a second
// unless forced.
func (a *Authenticator) reload(force bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	if !force && now.Sub(a.checked) < time.Second {
		return a.fileErr
	}
	a.checked = now
	fi, err := os.Stat(a.path)
	if errors.Is(err, os.ErrNotExist) {
		a.fromFile, a.modTime, a.size = nil, time.Time{}, 0
		a.setFileErr(nil)
		return nil
	}
	if err != nil {
		a.setFileErr(fmt.Errorf("token file: %w", err))
		return a.fileErr
	}
	if !force && fi.ModTime().Equal(a.modTime) && fi.Size() == a.size && a.fileErr == nil {
		return nil
	}
	f, err := ReadFile(a.path)
	if err != nil {
		// Keep no tokens from a broken file: fail closed.
		a.fromFile = nil
		a.setFileErr(err)
		return err
	}
	list := make([]stored, 0, len(f.Tokens))
	for _, e := range f.Tokens {
		r, _ := ParseRole(e.Role)
		raw, err := hex.DecodeString(e.Hash)
		if err != nil || len(raw) != 32 {
			a.fromFile = nil
			a.setFileErr(fmt.Errorf("token file %s: token %q has a malformed hash", a.path, e.Name))
			return a.fileErr
		}
		var h [32]byte
		copy(h[:], raw)
		list = append(list, stored{name: e.Name, groups: e.Groups, role: r, hash: h})
	}
	a.fromFile, a.modTime, a.size = list, fi.ModTime(), fi.Size()
	a.setFileErr(nil)
	return nil
}

// Configured reports whether any token exists (or the token file is broken,
// which counts as configured so that the server fails closed).
func (a *Authenticator) Configured() bool {
	if a == nil {
		return false
	}
	if len(a.static) > 0 {
		return true
	}
	if a.path == "" {
		return false
	}
	err := a.reload(false)
	a.mu.Lock()
	defer a.mu.Unlock()
	return err != nil || len(a.fromFile) > 0
}

// Check returns the identity of a presented secret, or false.
func (a *Authenticator) Check(secret string) (Identity, bool) {
	if a == nil || secret == "" {
		return Identity{}, false
	}
	h := sha256.Sum256([]byte(secret))
	var found Identity
	ok := false
	match := func(list []stored) {
		for _, s := range list {
			// Compare with every entry, so the time taken does not depend on
			// which entry matches.
			if subtle.ConstantTimeCompare(h[:], s.hash[:]) == 1 && !ok {
				found, ok = Identity{Name: s.name, Groups: s.groups, Role: s.role}, true
			}
		}
	}
	match(a.static)
	if a.path != "" {
		_ = a.reload(false)
		a.mu.Lock()
		list := a.fromFile
		a.mu.Unlock()
		match(list)
	}
	return found, ok
}
