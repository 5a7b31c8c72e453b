package snapshot

import (
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/veena-wf/veena/kernel"
)

// The snapshot and environment encoders below write, without reflection,
// exactly the bytes encoding/json writes for the snapshot structs
// (encodeJSON and json.Marshal of an attribute map): the stored format
// does not change, only the time it takes (a command encodes every process
// it changed, and that work adds to each command's latency).

// appendSnapshot appends the JSON snapshot of p to b.
func appendSnapshot(b []byte, p *kernel.Process) ([]byte, error) {
	base := p.CreatedAt.UnixNano()
	envs, envJSON, err := tokenEnvs(p)
	if err != nil {
		return nil, err
	}
	b = append(b, `{"q":`...)
	b = strconv.AppendInt(b, p.Seq, 10)
	if len(envJSON) > 0 {
		b = append(b, `,"e":[`...)
		for i, e := range envJSON {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, e...)
		}
		b = append(b, ']')
	}
	if len(p.NodeTokens) > 0 {
		b = append(b, `,"n":[`...)
		for i, t := range p.NodeTokens {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"n":`...)
			b = strconv.AppendInt(b, int64(t.Node.Index), 10)
			b = appendInt(b, `,"q":`, t.Seq)
			b = appendNonZero(b, `,"cq":`, t.CompleteSeq)
			if len(t.Parents) > 0 {
				b = append(b, `,"p":[`...)
				for j, a := range t.Parents {
					if j > 0 {
						b = append(b, ',')
					}
					b = strconv.AppendInt(b, int64(a.ID), 10)
				}
				b = append(b, ']')
			}
			if len(t.Children) > 0 {
				b = append(b, `,"c":[`...)
				for j, a := range t.Children {
					if j > 0 {
						b = append(b, ',')
					}
					b = strconv.AppendInt(b, int64(a.ID), 10)
				}
				b = append(b, ']')
			}
			b = appendNonZero(b, `,"g":`, int64(uint8(t.GuardAction)))
			b = appendNonZero(b, `,"x":`, int64(uint8(t.ExecType)))
			if t.Complete {
				b = append(b, `,"d":true`...)
			}
			b = appendNonZero(b, `,"t":`, offset(base, t.CreatedNs))
			b = appendNonZero(b, `,"f":`, optOffset(base, t.CompletedNs))
			if envs != nil {
				b = appendNonZero(b, `,"e":`, int64(envs[i]))
			}
			b = appendSets(b, t.Sets)
			b = appendNonZero(b, `,"du":`, t.DelayUntilNs)
			b = appendNonZero(b, `,"dc":`, int64(t.DelayCount))
			b = appendNonZero(b, `,"w":`, int64(t.Work))
			if len(t.Notes) > 0 {
				notes, err := json.Marshal(t.Notes)
				if err != nil {
					return nil, err
				}
				b = append(b, `,"o":`...)
				b = append(b, notes...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(p.ArcTokens) > 0 {
		b = append(b, `,"a":[`...)
		for i, a := range p.ArcTokens {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"a":`...)
			b = strconv.AppendInt(b, int64(a.Arc.Index), 10)
			b = appendInt(b, `,"q":`, a.Seq)
			b = appendInt(b, `,"p":`, int64(a.Parent.ID))
			child := int64(0)
			if a.Child != nil {
				child = int64(a.Child.ID) + 1
			}
			b = appendInt(b, `,"c":`, child)
			if a.Pending {
				b = append(b, `,"w":true`...)
			}
			if a.Complete {
				b = append(b, `,"d":true`...)
			}
			b = appendNonZero(b, `,"x":`, int64(uint8(a.ExecType)))
			b = appendSets(b, a.Sets)
			b = appendNonZero(b, `,"t":`, offset(base, a.CreatedNs))
			b = appendNonZero(b, `,"f":`, optOffset(base, a.CompletedNs))
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(p.TokenSets) > 0 {
		b = append(b, `,"s":[`...)
		for i, ts := range p.TokenSets {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"n":`...)
			b = appendString(b, ts.Name)
			b = appendInt(b, `,"m":`, int64(ts.MaxMemberIndex))
			b = appendInt(b, `,"v":`, int64(ts.Level))
			if ts.Env.Len() > 0 {
				b = append(b, `,"e":`...)
				if b, err = appendEnvMap(b, ts.Env); err != nil {
					return nil, err
				}
			}
			if members := ts.MemberEnv(); members.Members() > 0 {
				b = append(b, `,"em":[`...)
				for j := 0; j < members.Members(); j++ {
					m := members.Env(j)
					if j > 0 {
						b = append(b, ',')
					}
					if m.Len() == 0 {
						b = append(b, "null"...)
					} else if b, err = appendEnvMap(b, m); err != nil {
						return nil, err
					}
				}
				b = append(b, ']')
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(p.Listeners) > 0 {
		b = append(b, `,"l":[`...)
		for i, l := range p.Listeners {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"n":`...)
			b = appendString(b, l.Name)
			b = append(b, `,"m":`...)
			b = strconv.AppendUint(b, uint64(l.Mask), 10)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	ext, err := p.EncodedExt()
	if err != nil {
		return nil, err
	}
	if len(ext) > 0 {
		b = append(b, `,"x":"`...)
		b = base64.StdEncoding.AppendEncode(b, ext)
		b = append(b, '"')
	}
	return append(b, '}'), nil
}

func appendInt(b []byte, key string, v int64) []byte {
	b = append(b, key...)
	return strconv.AppendInt(b, v, 10)
}

// appendNonZero writes key and v unless v is 0 (omitempty).
func appendNonZero(b []byte, key string, v int64) []byte {
	if v == 0 {
		return b
	}
	return appendInt(b, key, v)
}

func appendSets(b []byte, ms []kernel.Membership) []byte {
	if len(ms) == 0 {
		return b
	}
	b = append(b, `,"s":[`...)
	for i, m := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(m.Set.ID), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(m.Member), 10)
		b = append(b, ']')
	}
	return append(b, ']')
}

// appendEnvMap appends the persistent attributes of e as json.Marshal
// writes a map of them: keys sorted, values as Value.MarshalJSON writes
// them.
func appendEnvMap(b []byte, e *kernel.Env) ([]byte, error) {
	b = append(b, '{')
	names := e.Names()
	for i, name := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, name)
		b = append(b, ':')
		v, _ := e.Get(name)
		switch v.Kind() {
		case kernel.KindString:
			b = appendString(b, v.Str())
		case kernel.KindInt:
			b = strconv.AppendInt(b, v.IntValue(), 10)
		case kernel.KindBool:
			b = strconv.AppendBool(b, v.BoolValue())
		default:
			// Rare kinds go through the value's own encoder; json.Marshal
			// would also compact its output, which is compact already.
			x, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			b = append(b, x...)
		}
	}
	return append(b, '}'), nil
}

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it (HTML characters included).
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
