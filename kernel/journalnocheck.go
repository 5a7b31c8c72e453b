//go:build !veenajournal

package kernel

// checkJournal is off: Engine.saved checks nothing (see journal.go).
const checkJournal = false
