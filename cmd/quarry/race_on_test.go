//go:build race

package main

// raceEnabled reports whether the test binary was built with the race
// detector; quarryBinary then builds quarry's child processes without it.
const raceEnabled = true
