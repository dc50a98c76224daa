package dashboard

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// usageSource is what the health page reads of a *cdb.Provider.
type usageSource interface {
	Usage() cdb.Usage
	Ping(ctx context.Context) error
}

// usageOf returns admin's usage source when it is a *cdb.Provider, nil
// otherwise.
func usageOf(admin duroxide.ProviderAdmin) usageSource {
	if p, ok := admin.(*cdb.Provider); ok {
		return p
	}
	return nil
}

// sampleWindow is how far back the chart goes.
const sampleWindow = time.Hour

// sample is one reading of Usage.
type sample struct {
	at    time.Time
	usage cdb.Usage
}

// sampler reads Usage every interval in a goroutine and keeps the last
// sampleWindow of readings.
type sampler struct {
	src      usageSource
	interval time.Duration
	now      func() time.Time
	done     chan struct{}
	stopped  chan struct{}

	mu      sync.Mutex
	samples []sample
}

// newSampler starts a sampler; stop ends its goroutine.
func newSampler(src usageSource, interval time.Duration, now func() time.Time) *sampler {
	s := &sampler{src: src, interval: interval, now: now, done: make(chan struct{}), stopped: make(chan struct{})}
	s.take()
	go s.run()
	return s
}

func (s *sampler) run() {
	defer close(s.stopped)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.take()
		}
	}
}

// take records one reading and drops those older than the window.
func (s *sampler) take() {
	now := s.now()
	u := s.src.Usage()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, sample{at: now, usage: u})
	cut := 0
	for cut < len(s.samples)-1 && now.Sub(s.samples[cut].at) > sampleWindow {
		cut++
	}
	s.samples = s.samples[cut:]
}

// stop ends the goroutine and waits for it.
func (s *sampler) stop() {
	close(s.done)
	<-s.stopped
}

// snapshot returns a copy of the readings, oldest first.
func (s *sampler) snapshot() []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sample(nil), s.samples...)
}

// chart is one server-rendered SVG line chart.
type chart struct {
	Title  string
	Unit   string
	Points string // SVG polyline points
	Max    string // the y axis' top label
	From   string // the x axis' left label (UTC)
	To     string
	Last   string // the last value
	Empty  bool
}

// Chart geometry, in SVG user units.
const (
	chartW, chartH = 600.0, 120.0
)

// rates turns readings into per-minute rates of f between consecutive
// readings and draws them.
func rates(title, unit string, samples []sample, f func(cdb.Usage) float64) chart {
	c := chart{Title: title, Unit: unit}
	if len(samples) < 2 {
		c.Empty = true
		return c
	}
	type pt struct {
		t time.Time
		v float64
	}
	var pts []pt
	peak := 0.0
	for i := 1; i < len(samples); i++ {
		dt := samples[i].at.Sub(samples[i-1].at).Minutes()
		if dt <= 0 {
			continue
		}
		v := max(f(samples[i].usage)-f(samples[i-1].usage), 0) / dt
		pts = append(pts, pt{samples[i].at, v})
		peak = max(peak, v)
	}
	if len(pts) == 0 {
		c.Empty = true
		return c
	}
	from, to := samples[0].at, samples[len(samples)-1].at
	span := to.Sub(from).Seconds()
	top := niceCeil(peak)
	var b strings.Builder
	for _, p := range pts {
		x := chartW * p.t.Sub(from).Seconds() / span
		y := chartH - chartH*p.v/top
		fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
	}
	c.Points = strings.TrimSpace(b.String())
	c.Max = readableNumber(top) + " " + unit
	c.From, c.To = from.UTC().Format("15:04:05Z"), to.UTC().Format("15:04:05Z")
	c.Last = readableNumber(pts[len(pts)-1].v) + " " + unit
	return c
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 at least).
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := 1.0
	for p*10 <= v {
		p *= 10
	}
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// healthData is the health and cost page.
type healthData struct {
	PingOK      bool
	PingError   string
	PingLatency string
	Usage       cdb.Usage
	Charts      []chart
	Samples     int
	Interval    string
}

// healthPage pings the provider (1 request) and shows its Usage since it
// was opened and the per-minute rates over the last hour from the
// sampler's readings.
func (h *Handler) healthPage(w http.ResponseWriter, r *http.Request) {
	if h.usage == nil {
		h.fail(w, r, http.StatusNotFound, "the health and cost page needs a *cdb.Provider as Options.Admin")
		return
	}
	d := healthData{Interval: h.opts.SampleInterval.String()}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	start := time.Now()
	err := h.usage.Ping(ctx)
	cancel()
	d.PingLatency = formatDuration(time.Since(start))
	d.PingOK = err == nil
	if err != nil {
		d.PingError = err.Error()
	}
	d.Usage = h.usage.Usage()
	samples := h.sampler.snapshot()
	samples = append(samples, sample{at: h.opts.Now(), usage: d.Usage})
	d.Samples = len(samples)
	d.Charts = []chart{
		rates("Requests", "req/min", samples, func(u cdb.Usage) float64 { return float64(u.Requests) }),
		rates("Request units", "RU/min", samples, func(u cdb.Usage) float64 { return u.RequestCharge }),
		rates("Throttled (429)", "/min", samples, func(u cdb.Usage) float64 { return float64(u.Throttled) }),
	}
	h.render(w, r, http.StatusOK, "health", "Health and cost", d)
}

// readableNumber writes v for a chart label: "850", "12.5", "3.2k",
// "2M" (never the exponent form "2e+06").
func readableNumber(v float64) string {
	trim := func(s string) string { return strings.TrimSuffix(strings.TrimRight(s, "0"), ".") } // s has a decimal point
	switch a := math.Abs(v); {
	case a >= 1e9:
		return trim(fmt.Sprintf("%.1f", v/1e9)) + "G"
	case a >= 1e6:
		return trim(fmt.Sprintf("%.1f", v/1e6)) + "M"
	case a >= 1e4:
		return trim(fmt.Sprintf("%.1f", v/1e3)) + "k"
	case a >= 100 || a == math.Trunc(a):
		return fmt.Sprintf("%.0f", v)
	}
	return trim(fmt.Sprintf("%.2f", v))
}
