//go:build veenajournal

package kernel

// checkJournal makes Engine.saved check that the token game changes only
// processes the undo journal saved (see journal.go).
const checkJournal = true
