package main

import (
	"strings"
	"testing"
	"time"
)

// TestRenderPeerRatios checks the ratio rows of a run's section: every
// target against dynalite, and quarry against moto and against its base
// build when the run has them.
func TestRenderPeerRatios(t *testing.T) {
	res := func(target string, ops int, cpu time.Duration) result {
		return result{op: "PutItem", target: target, ops: ops, elapsed: time.Second, serverCPU: cpu * time.Duration(ops)}
	}
	cases := []struct {
		name    string
		results []result
		want    []string
		notWant []string
	}{{
		name: "quarry, quarry-base, moto and dynalite",
		results: []result{res("quarry", 3000, 60*time.Microsecond), res("quarry-base", 2000, 100*time.Microsecond),
			res("moto", 300, 2*time.Millisecond), res("dynalite", 1500, 180*time.Microsecond)},
		want: []string{
			"| **quarry/dynalite** | **2.00×** |",
			"| **moto/dynalite** | **0.20×** |",
			"| **quarry/moto** | **10.00×** | – | – | – | 0.03× |",
			"| **quarry/quarry-base** | **1.50×** | – | – | – | 0.60× |",
		},
	}, {
		name:    "without moto or a base build",
		results: []result{res("quarry", 3000, 60*time.Microsecond), res("dynalite", 1500, 180*time.Microsecond)},
		want:    []string{"| **quarry/dynalite** | **2.00×** |"},
		notWant: []string{"quarry/moto", "quarry/quarry-base"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config{ops: []string{"PutItem"}, concurrency: 16, duration: time.Second, rounds: 1}
			for _, r := range tc.results {
				cfg.targets = append(cfg.targets, target{name: r.target})
			}
			checkSection(t, render(cfg, tc.results), tc.want, tc.notWant)
		})
	}
}

// TestRenderTargets checks the section's targets line: with a base build
// in the run, quarry's server CPU per request against it, met or missed
// per operation; without one, the throughput targets against dynalite.
func TestRenderTargets(t *testing.T) {
	res := func(op, target string, ops int, cpu time.Duration) result {
		return result{op: op, target: target, ops: ops, elapsed: time.Second, serverCPU: cpu * time.Duration(ops)}
	}
	cases := []struct {
		name    string
		results []result
		want    []string
		notWant []string
	}{{
		name: "with a base build",
		results: []result{
			res("GetItem", "quarry", 2000, 120*time.Microsecond), res("GetItem", "quarry-base", 2000, 150*time.Microsecond),
			res("PutItem", "quarry", 2000, 180*time.Microsecond), res("PutItem", "quarry-base", 2000, 200*time.Microsecond),
			res("GetItem", "dynalite", 1000, 300*time.Microsecond), res("PutItem", "dynalite", 1000, 300*time.Microsecond),
		},
		want: []string{
			"Targets (server CPU per request against quarry-base, the base build in this run: PutItem ≤ 0.75×, GetItem ≤ 0.85×): ",
			"GetItem 0.80× (120 µs vs 150 µs; target ≤ 0.85×, met)",
			"PutItem 0.90× (180 µs vs 200 µs; target ≤ 0.75×, missed)",
		},
		notWant: []string{"10×", "dynalite on each"},
	}, {
		name: "without a base build",
		results: []result{
			res("GetItem", "quarry", 2000, 120*time.Microsecond), res("GetItem", "dynalite", 1000, 300*time.Microsecond),
		},
		want:    []string{"Targets (≥ 10× dynalite on each, GetItem p99 < 2 ms): GetItem 2.0× dynalite (missed)"},
		notWant: []string{"quarry-base"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config{ops: []string{"GetItem", "PutItem"}, concurrency: 16, duration: time.Second, rounds: 1}
			seen := map[string]bool{}
			for _, r := range tc.results {
				if !seen[r.target] {
					seen[r.target] = true
					cfg.targets = append(cfg.targets, target{name: r.target})
				}
			}
			checkSection(t, render(cfg, tc.results), tc.want, tc.notWant)
		})
	}
}

// checkSection reports each of want that out lacks and each of notWant it
// has.
func checkSection(t *testing.T, out string, want, notWant []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("section lacks %q:\n%s", w, out)
		}
	}
	for _, w := range notWant {
		if strings.Contains(out, w) {
			t.Errorf("section has %q:\n%s", w, out)
		}
	}
}
