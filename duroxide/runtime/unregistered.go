package runtime

import (
	"fmt"
	"strings"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Poison messages of handlers that are not registered. duroxide abandons a
// message whose orchestration or activity is not registered with the
// UnregisteredBackoff (another runtime of a rolling deployment may have
// it) and poisons it after MaxAttempts; its poison text ("poison:
// orchestration X exceeded 11 attempts") does not say why. When the
// handler is still not registered at that point, the runtime puts a note
// saying so on the first line of the PoisonDetails' Message (before the
// serialized messages duroxide keeps there), and failureMessage adds that
// note to the display message users read.

// notRegisteredMark is what a note holds, and what failureMessage looks for.
const notRegisteredMark = " is not registered in the runtimes that fetched it"

// notRegisteredNote is the note for a handler of kind ("orchestration" or
// "activity") named name.
func notRegisteredNote(kind, name string) string {
	return fmt.Sprintf("%s %q%s: register it, or fix the name", kind, name, notRegisteredMark)
}

// withNote prefixes a poison message with note on a line of its own; an
// empty note leaves it as it is.
func withNote(note, message string) string {
	if note == "" {
		return message
	}
	return note + "\n" + message
}

// failureMessage is d's display message (duroxide's Display), followed by
// the not-registered note of a poison message when it carries one.
func failureMessage(d duroxide.ErrorDetails) string {
	msg := d.DisplayMessage()
	if d.Poison != nil {
		if first, _, ok := strings.Cut(d.Poison.Message, "\n"); ok && strings.Contains(first, notRegisteredMark) {
			msg += ": " + first
		}
	}
	return msg
}

// unregisteredOrchestration returns the note for an orchestration item
// whose orchestration (named by its start or continue-as-new message, else
// by the instance) is not registered here, and "" when it is.
func (p *turnProcessor) unregisteredOrchestration(item *duroxide.OrchestrationItem) string {
	name, version := item.OrchestrationName, (*string)(nil)
	if item.Version != "" {
		version = &item.Version
	}
	for _, m := range item.Messages {
		switch k := m.Kind.(type) {
		case duroxide.StartOrchestrationItem:
			name, version = k.Orchestration, k.Version
		case duroxide.ContinueAsNewItem:
			name, version = k.Orchestration, k.Version
		}
	}
	if name == "" {
		return ""
	}
	if _, _, ok := p.registry.resolveOrchestration(name, version); ok {
		return ""
	}
	return notRegisteredNote("orchestration", name)
}
