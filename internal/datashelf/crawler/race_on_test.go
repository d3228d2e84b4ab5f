//go:build race

package crawler

// raceOn reports whether the test binary was built with the race detector;
// the end-to-end tests crawl smaller fixtures then.
const raceOn = true
