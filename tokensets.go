package veena

import (
	"context"
	"strconv"
)

// TokenSet is a token set of a process as the API shows it: its shared
// environment, and one environment per member (MemberEnvs[i] is member
// i's), the attributes each member's tokens see of their own.
type TokenSet struct {
	ID         string             `json:"id"`
	Process    string             `json:"process"`
	Name       string             `json:"name"`
	Members    int                `json:"members"`
	Level      int                `json:"level"`
	Env        map[string]Value   `json:"env"`
	MemberEnvs []map[string]Value `json:"memberEnvs"`
}

// TokenSets returns the token sets of a process, in the order they were
// made.
func (e *Engine) TokenSets(ctx context.Context, processID string) ([]TokenSet, error) {
	p, err := e.decodeOne(ctx, processID)
	if err != nil {
		return nil, err
	}
	out := make([]TokenSet, 0, len(p.TokenSets))
	for _, s := range p.TokenSets {
		m := s.MemberEnv()
		x := TokenSet{ID: p.ID + ".s" + strconv.Itoa(s.ID), Process: p.ID, Name: s.Name, Members: m.Members(), Level: s.Level,
			Env: s.Env.Map(), MemberEnvs: make([]map[string]Value, m.Members())}
		for i := range x.MemberEnvs {
			x.MemberEnvs[i] = m.Env(i).Map()
		}
		out = append(out, x)
	}
	return out, nil
}
