package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/paygate/paygate/internal/tracing"
)

// traceSettings are the standard OpenTelemetry variables that decide
// whether serve exports traces, and how it samples them (decisions §16).
// They come from the command's environment; the exporter reads the rest of
// its standard variables (OTEL_EXPORTER_OTLP_HEADERS, ..._TIMEOUT,
// ..._COMPRESSION, ..._CERTIFICATE, OTEL_BSP_*, OTEL_RESOURCE_ATTRIBUTES,
// OTEL_SERVICE_NAME) from the process environment itself.
type traceSettings struct {
	// Endpoint is the URL spans are posted to: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
	// as it is, or OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces added. ""
	// (neither set, OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none)
	// leaves tracing off.
	Endpoint string
	// Exporter is OTEL_TRACES_EXPORTER, and Protocol the traces' (or every
	// signal's) OTEL_EXPORTER_OTLP_PROTOCOL: only otlp over http/protobuf
	// is served.
	Exporter, Protocol string
	// Sampler and SamplerArg are OTEL_TRACES_SAMPLER and its argument.
	Sampler, SamplerArg string
}

// traceSettingsFromEnv reads the settings.
func traceSettingsFromEnv(env func(string) string) traceSettings {
	t := traceSettings{
		Exporter:   strings.TrimSpace(env("OTEL_TRACES_EXPORTER")),
		Protocol:   strings.TrimSpace(env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")),
		Sampler:    strings.TrimSpace(env("OTEL_TRACES_SAMPLER")),
		SamplerArg: strings.TrimSpace(env("OTEL_TRACES_SAMPLER_ARG")),
	}
	if t.Protocol == "" {
		t.Protocol = strings.TrimSpace(env("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	if strings.EqualFold(strings.TrimSpace(env("OTEL_SDK_DISABLED")), "true") || t.Exporter == "none" {
		return t
	}
	if u := strings.TrimSpace(env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); u != "" {
		t.Endpoint = u
	} else if u := strings.TrimSpace(env("OTEL_EXPORTER_OTLP_ENDPOINT")); u != "" {
		t.Endpoint = strings.TrimRight(u, "/") + "/v1/traces"
	}
	return t
}

// sampler returns the sampler of OTEL_TRACES_SAMPLER: always_on (the
// default), always_off or traceidratio, each also under its parentbased_
// name. Whatever the name, a span under a span of this process follows its
// parent's decision, and a span under a client's traceparent is decided as
// if it had no parent: a client's sampled flag neither forces nor
// suppresses the tracing of its requests (tracing.StartRequest).
func (t traceSettings) sampler() (sdktrace.Sampler, error) {
	var root sdktrace.Sampler
	switch strings.TrimPrefix(t.Sampler, "parentbased_") {
	case "", "always_on":
		root = sdktrace.AlwaysSample()
	case "always_off":
		root = sdktrace.NeverSample()
	case "traceidratio":
		ratio := 1.0
		if t.SamplerArg != "" {
			r, err := strconv.ParseFloat(t.SamplerArg, 64)
			if err != nil || r < 0 || r > 1 {
				return nil, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG %q is not a ratio from 0 to 1", t.SamplerArg)
			}
			ratio = r
		}
		root = sdktrace.TraceIDRatioBased(ratio)
	default:
		return nil, fmt.Errorf("OTEL_TRACES_SAMPLER %q is not served: use always_on, always_off or traceidratio (or their parentbased_ names)", t.Sampler)
	}
	return tracing.Sampler(root), nil
}

// check refuses settings that would export nothing a collector can read,
// rather than drop every span quietly.
func (t traceSettings) check() error {
	if t.Exporter != "" && t.Exporter != "otlp" && t.Exporter != "none" {
		return fmt.Errorf("OTEL_TRACES_EXPORTER %q is not served: traces are exported with otlp only", t.Exporter)
	}
	if t.Endpoint == "" {
		return nil
	}
	if t.Protocol != "" && t.Protocol != "http/protobuf" {
		return fmt.Errorf("OTLP protocol %q is not served: traces are exported over http/protobuf", t.Protocol)
	}
	u, err := url.Parse(t.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("the OTLP traces endpoint %s is not an http(s) URL", redactURL(t.Endpoint))
	}
	return nil
}

// traceFlushTimeout bounds the export of the spans still buffered when
// serve stops.
const traceFlushTimeout = 5 * time.Second

// startTracing installs the OTLP/HTTP exporter when the settings name an
// endpoint, and returns the function that flushes what is buffered and
// turns tracing off (serve defers it, so that it runs after HTTP has
// drained and the workers have stopped). Without an endpoint nothing is
// installed: every hook stays a no-op.
func startTracing(ctx context.Context, t traceSettings, log *slog.Logger) (stop func(), err error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if t.Endpoint == "" {
		return func() {}, nil
	}
	sampler, err := t.sampler()
	if err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(t.Endpoint))
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	attrs := []resource.Option{resource.WithAttributes(semconv.ServiceName("paygate"))}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceVersion(bi.Main.Version)))
	}
	// The host's name tells the nodes apart; the environment's
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over both.
	attrs = append(attrs, resource.WithHost(), resource.WithFromEnv())
	res, err := resource.New(ctx, attrs...)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("traces: %w", err)
	}
	tp := sdktrace.NewTracerProvider(
		// Spans are sent in batches from a queue, off the request's path;
		// when the collector is slower than paygate, the queue drops
		// spans rather than slow down payments.
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sampler),
	)
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		// The exporter's errors quote the endpoint's URL, which may hold a
		// user and password: never log them.
		log.Warn("trace export failed", "error", urlUserinfo.ReplaceAllString(err.Error(), "://***@"))
	}))
	uninstall := tracing.Install(tp)
	log.Info("exporting traces", "endpoint", redactURL(t.Endpoint), "sampler", cmp.Or(strings.TrimPrefix(t.Sampler, "parentbased_"), "always_on"))
	return func() {
		uninstall()
		fctx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
		defer cancel()
		if err := tp.Shutdown(fctx); err != nil {
			log.Warn("traces not all exported at shutdown", "error", err)
		}
	}, nil
}

// urlUserinfo matches the user and password part of a URL in a text.
var urlUserinfo = regexp.MustCompile(`://[^/@\s]+@`)
