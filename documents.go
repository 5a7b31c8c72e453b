package veena

import (
	"context"
	"fmt"
	"time"

	"github.com/veena-wf/veena/internal/docmatch"
	"github.com/veena-wf/veena/internal/ident"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/store"
)

// Processes started by documents (MarkLogic Workflow's process
// subscriptions): a subscription names a definition and a CEL condition
// over incoming documents; every document submitted that a subscription's
// condition holds for starts a process of its definition, whose attachment
// InitiatingAttachment references the document (it is not copied).

// Subscription starts a process for every document its Match holds for.
type Subscription struct {
	Name       string    `json:"name"`
	Definition string    `json:"definition"`
	Version    int       `json:"version"` // 0: the latest when a document arrives
	Match      string    `json:"match"`
	CreatedAt  time.Time `json:"createdAt"`
}

// Document is an incoming document: its URI, collections and content
// (decoded JSON).
type Document struct {
	URI         string
	Collections []string
	Content     any
}

// DocumentResult says what a document started.
type DocumentResult struct {
	Started []string        `json:"started"`
	Errors  []DocumentError `json:"errors"`
}

// DocumentError is a subscription that could not act on a document: its
// condition failed, or its process did not start.
type DocumentError struct {
	Subscription string `json:"subscription"`
	Message      string `json:"message"`
}

// InitiatingAttachment names the attachment of a process started by a document.
const InitiatingAttachment = "InitiatingAttachment"

// ErrMatchInvalid: a subscription's condition does not compile.
var ErrMatchInvalid = &kernel.Error{Code: "match_invalid", Msg: "the condition does not compile"}

var subscriptionNameForm = ident.New("A-Za-z0-9", "A-Za-z0-9._:-", 127)

func subscriptionOf(s *store.Subscription) *Subscription {
	return &Subscription{Name: s.Name, Definition: s.Definition, Version: s.Version, Match: s.Match, CreatedAt: s.CreatedAt}
}

// CreateSubscription stores a new subscription: its name must be free
// (ErrConflict), its definition loaded, its condition valid
// (ErrMatchInvalid, saying why).
func (e *Engine) CreateSubscription(ctx context.Context, s Subscription) (*Subscription, error) {
	if !subscriptionNameForm.Match(s.Name) {
		return nil, invalid("subscription name %q: use 1-128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit", s.Name)
	}
	if s.Definition == "" {
		return nil, invalid("name the definition the subscription starts")
	}
	if s.Version < 0 {
		return nil, invalid("version %d: want a version number from 1, or none for the latest", s.Version)
	}
	if _, err := e.definitionGraph(ctx, s.Definition, s.Version); err != nil {
		return nil, err
	}
	if _, err := docmatch.Cached(s.Match); err != nil {
		return nil, &kernel.Error{Code: ErrMatchInvalid.Code, Msg: fmt.Sprintf("subscription %s: match: %v", s.Name, err)}
	}
	row := &store.Subscription{Name: s.Name, Definition: s.Definition, Version: s.Version, Match: s.Match, CreatedAt: e.clock().UTC()}
	if err := e.store.PutSubscription(ctx, row); err != nil {
		return nil, storeError("store the subscription", err)
	}
	return subscriptionOf(row), nil
}

// Subscriptions lists the subscriptions by name.
func (e *Engine) Subscriptions(ctx context.Context) ([]Subscription, error) {
	rows, err := e.store.Subscriptions(ctx)
	if err != nil {
		return nil, storeError("list subscriptions", err)
	}
	out := make([]Subscription, len(rows))
	for i, r := range rows {
		out[i] = *subscriptionOf(r)
	}
	return out, nil
}

// Subscription returns a subscription.
func (e *Engine) Subscription(ctx context.Context, name string) (*Subscription, error) {
	r, err := e.store.Subscription(ctx, name)
	if err != nil {
		return nil, storeError("read subscription", err)
	}
	return subscriptionOf(r), nil
}

// DeleteSubscription removes a subscription and returns what it was.
func (e *Engine) DeleteSubscription(ctx context.Context, name string) (*Subscription, error) {
	s, err := e.Subscription(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := e.store.DeleteSubscription(ctx, name); err != nil {
		return nil, storeError("delete subscription", err)
	}
	return s, nil
}

// MaxDocumentURI bounds a document's URI.
const MaxDocumentURI = 4000

// SubmitDocument offers a document to every subscription: each whose
// condition holds starts a process of its definition with the attachment
// InitiatingAttachment = the document's URI. A document that matches
// nothing changes nothing; a condition that fails, or a process that does
// not start, is reported in Errors and does not stop the others. With an
// idempotency key, a retry starts no subscription's process twice.
func (e *Engine) SubmitDocument(ctx context.Context, doc Document, user, idempotencyKey string) (*DocumentResult, error) {
	if doc.URI == "" {
		return nil, invalid("a document needs a uri")
	}
	if len(doc.URI) > MaxDocumentURI {
		return nil, invalid("the document's uri is %d bytes long; the limit is %d", len(doc.URI), MaxDocumentURI)
	}
	subs, err := e.store.Subscriptions(ctx)
	if err != nil {
		return nil, storeError("list subscriptions", err)
	}
	res := &DocumentResult{Started: []string{}, Errors: []DocumentError{}}
	for _, s := range subs {
		m, err := docmatch.Cached(s.Match)
		if err == nil {
			var ok bool
			ok, err = m.Match(doc.URI, doc.Collections, doc.Content)
			if err == nil && !ok {
				continue
			}
		}
		if err != nil {
			res.Errors = append(res.Errors, DocumentError{Subscription: s.Name, Message: err.Error()})
			continue
		}
		key := ""
		if idempotencyKey != "" {
			key = "document " + idempotencyKey + " subscription " + s.Name
		}
		p, err := e.StartProcess(ctx, StartRequest{Definition: s.Definition, Version: s.Version, User: user, IdempotencyKey: key,
			Attachments: []Attachment{{Name: InitiatingAttachment, URI: doc.URI, Cardinality: 1}}})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			res.Errors = append(res.Errors, DocumentError{Subscription: s.Name, Message: err.Error()})
			continue
		}
		res.Started = append(res.Started, p.ID)
	}
	return res, nil
}
