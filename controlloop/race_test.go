//go:build race

package controlloop

const raceEnabled = true
