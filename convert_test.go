package veena

import (
	"testing"

	"github.com/veena-wf/veena/kernel"
)

// Every kernel event type is written as a number in the compact record,
// not by name: a type added to the kernel belongs in store's list too.
func TestEventTypesHaveCodes(t *testing.T) {
	for i, typ := range kernel.EventTypes {
		if eventTypeCodes[i] == 0 {
			t.Errorf("%s has no number in the compact event record", typ)
		}
	}
}
