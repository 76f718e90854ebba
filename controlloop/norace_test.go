//go:build !race

package controlloop

const raceEnabled = false
