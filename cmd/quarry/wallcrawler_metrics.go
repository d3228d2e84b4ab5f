package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/quarrydb/quarry/internal/platform/metrics"
)

// registerLeaseMetrics adds Wallcrawler's lease figures to reg: how long
// ago this process renewed its lease, and how many sessions of dead
// processes it ended. wc nil (Wallcrawler not running) reads as zeros.
func registerLeaseMetrics(reg *metrics.Registry, wcOf func() *wallcrawler) {
	reg.Gauge("wallcrawler_lease_age_seconds", "Seconds since this process last renewed its Wallcrawler lease; past --wallcrawler-lease the other processes end its sessions.", func() float64 {
		wc := wcOf()
		if wc == nil {
			return 0
		}
		return wc.manager.LeaseStatus().Age.Seconds()
	})
	reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "quarry_wallcrawler_orphaned_sessions_ended_total",
		Help: "Sessions of other processes whose lease expired that this process ended (ERROR, slot freed)."}, func() float64 {
		wc := wcOf()
		if wc == nil {
			return 0
		}
		return float64(wc.manager.LeaseStatus().OrphansEnded)
	}))
}
