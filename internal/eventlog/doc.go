// Package eventlog keeps, in memory and bounded, what an operator asks
// about after the fact: the recent decisions of mcrib (Log, served by
// GET /v1/events) and the recent history of its figures (History, served
// by GET /v1/history), as the documents of package mcribapi (Event,
// History). Both take their time from a clock.Clock.
package eventlog
