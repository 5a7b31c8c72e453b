package server

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus collectors.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	inflight prometheus.Gauge
	streams  prometheus.Gauge
}

// newMetrics registers the server's metrics on reg, with the gauges read
// from eng at scrape time if there is an engine.
func newMetrics(reg *prometheus.Registry, eng Engine, log *slog.Logger) *metrics {
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "veena_http_requests_total",
			Help: "HTTP requests answered, by route, method and status code.",
		}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "veena_http_request_duration_seconds",
			Help:    "Time to answer HTTP requests, by route and method (event streams excluded).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "veena_http_requests_in_flight",
			Help: "HTTP requests being answered now.",
		}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "veena_event_streams",
			Help: "Open server-sent event streams.",
		}),
	}
	reg.MustRegister(m.requests, m.latency, m.inflight, m.streams)
	if eng != nil {
		reg.MustRegister(&inboxCollector{eng: eng, log: log})
		reg.MustRegister(&attentionCollector{eng: eng, log: log})
		reg.MustRegister(&workCollector{eng: eng, log: log})
	}
	// A registry given by the caller may already hold the runtime collectors.
	_ = reg.Register(collectors.NewGoCollector())
	_ = reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// inboxTimeout bounds the count of waiting commands at a scrape.
const inboxTimeout = 2 * time.Second

// inboxCollector reports veena_inbox_waiting_commands, counted in the
// store at each scrape. If the count fails (the store is unreachable, or
// too slow), the scrape goes on without the gauge.
type inboxCollector struct {
	eng Engine
	log *slog.Logger
}

var inboxWaitingDesc = prometheus.NewDesc("veena_inbox_waiting_commands",
	"Commands waiting in the durable inboxes of process trees, not yet applied (counted in the store, which engines sharing a database share).",
	nil, nil)

func (c *inboxCollector) Describe(ch chan<- *prometheus.Desc) { ch <- inboxWaitingDesc }

func (c *inboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), inboxTimeout)
	defer cancel()
	n, err := c.eng.WaitingCommands(ctx)
	if err != nil {
		c.log.Warn("metrics: could not count the commands waiting in inboxes; veena_inbox_waiting_commands left out of this scrape", "err", err)
		return
	}
	ch <- prometheus.MustNewConstMetric(inboxWaitingDesc, prometheus.GaugeValue, float64(n))
}

// attentionCollector reports veena_processes_stalled and
// veena_timers_failing, counted in the store at each scrape; a count that
// fails leaves both out of the scrape.
type attentionCollector struct {
	eng Engine
	log *slog.Logger
}

var (
	stalledDesc = prometheus.NewDesc("veena_processes_stalled",
		"Executing processes that cannot move on by themselves: no active node token, only arc tokens waiting at joins (counted in the store).",
		nil, nil)
	failingTimersDesc = prometheus.NewDesc("veena_timers_failing",
		"Delayed node tokens whose guard failed when their time came; each is tried again later (counted in the store).",
		nil, nil)
)

func (c *attentionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- stalledDesc
	ch <- failingTimersDesc
}

func (c *attentionCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), inboxTimeout)
	defer cancel()
	a, err := c.eng.Attention(ctx)
	if err != nil {
		c.log.Warn("metrics: could not count stalled processes and failing timers; left out of this scrape", "err", err)
		return
	}
	ch <- prometheus.MustNewConstMetric(stalledDesc, prometheus.GaugeValue, float64(a.Stalled))
	ch <- prometheus.MustNewConstMetric(failingTimersDesc, prometheus.GaugeValue, float64(a.FailingTimers))
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func (m *metrics) observe(route, method string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	if d > 0 {
		m.latency.WithLabelValues(route, method).Observe(d.Seconds())
	}
}

// statusWriter remembers the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
	stream bool
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flush, deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// instrument counts and times requests of one route.
func (s *Server) instrument(route string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		s.metrics.inflight.Inc()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			s.metrics.inflight.Dec()
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			d := time.Since(start)
			if sw.stream {
				d = 0
			}
			s.metrics.observe(route, r.Method, status, d)
			if s.log.Enabled(r.Context(), slog.LevelDebug) {
				s.log.Debug("http", "method", r.Method, "path", r.URL.Path, "status", status, "duration", time.Since(start))
			}
		}()
		h.ServeHTTP(sw, r)
	})
}
