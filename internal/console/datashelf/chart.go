package datashelf

import (
	"fmt"
	"time"

	"github.com/quarrydb/quarry/internal/console"
)

// bars is a server-rendered SVG bar chart (crawl.html draws it) of finished jobs per bucket in a 600×140 view box:
// the plot area is x 60–590, y 10–110.
type bars struct {
	Bars  []bar
	Max   int
	From  string
	To    string
	Total int
	Fails int
}

type bar struct {
	X, W                   float64
	YOK, HOK, YFail, HFail float64
	Title                  string
}

// ThroughputPoint is the number of jobs that finished in a bucket.
type ThroughputPoint struct {
	Start     time.Time
	Completed int
	Failed    int
}

// throughputBars draws points (oldest first), each bucket wide.
func throughputBars(points []ThroughputPoint, bucket time.Duration) bars {
	if len(points) == 0 {
		return bars{}
	}
	hi := 1
	b := bars{}
	for _, p := range points {
		hi = max(hi, p.Completed+p.Failed)
		b.Total += p.Completed
		b.Fails += p.Failed
	}
	hi = int(console.NiceCeil(int64(hi)))
	b.Max = hi
	w := 530 / float64(len(points))
	for i, p := range points {
		hok := 100 * float64(p.Completed) / float64(hi)
		hf := 100 * float64(p.Failed) / float64(hi)
		b.Bars = append(b.Bars, bar{X: 60 + float64(i)*w, W: max(w-1, 0.5), YOK: 110 - hok, HOK: hok, YFail: 110 - hok - hf, HFail: hf,
			Title: fmt.Sprintf("%s: %d completed, %d failed", p.Start.UTC().Format("Jan 2 15:04"), p.Completed, p.Failed)})
	}
	b.From = points[0].Start.UTC().Format("Jan 2 15:04")
	b.To = points[len(points)-1].Start.Add(bucket).UTC().Format("Jan 2 15:04 MST")
	return b
}
