package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/paygate/paygate/internal/tracing"
)

// queryTracer gives every round trip a request or a webhook delivery makes
// to PostgreSQL a client span (tracing.StartStatement): each Query,
// QueryRow and Exec, and each pipelined batch (a unit's Commit is one). It
// is set on the pool only when tracing is on (OpenWith), so that off, pgx
// calls nothing. A round trip with no recording span in its context (a
// background poll) makes no span.
type queryTracer struct{}

var (
	_ pgx.QueryTracer = queryTracer{}
	_ pgx.BatchTracer = queryTracer{}
)

// spanKey holds the span a round trip started, for its end: the context's
// current span may be the caller's.
type spanKey struct{}

var dbSystem = semconv.DBSystemNamePostgreSQL

// TraceQueryStart starts the span of a Query, QueryRow or Exec.
func (queryTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if !tracing.Active(ctx) {
		return ctx
	}
	ctx, span := tracing.StartStatement(ctx, dbSystem, data.SQL)
	return context.WithValue(ctx, spanKey{}, span)
}

// TraceQueryEnd ends it.
func (queryTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	endRoundTrip(ctx, data.Err)
}

// TraceBatchStart starts the span of a batch, summarising its statements.
func (queryTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	if !tracing.Active(ctx) || data.Batch == nil {
		return ctx
	}
	sql := make([]string, len(data.Batch.QueuedQueries))
	for i, q := range data.Batch.QueuedQueries {
		sql[i] = q.SQL
	}
	ctx, span := tracing.StartStatement(ctx, dbSystem, sql...)
	return context.WithValue(ctx, spanKey{}, span)
}

// TraceBatchQuery is called per statement of a batch: the batch's span
// covers them all.
func (queryTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd ends a batch's span.
func (queryTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	endRoundTrip(ctx, data.Err)
}

// endRoundTrip ends the span the round trip started, if any, failed with
// the SQLSTATE of a database error (never its message, which may quote
// the row's values).
func endRoundTrip(ctx context.Context, err error) {
	span, ok := ctx.Value(spanKey{}).(trace.Span)
	if !ok {
		return
	}
	errType := ""
	if err != nil {
		errType = "error"
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			errType = pgErr.Code
		} else if errors.Is(err, context.DeadlineExceeded) {
			errType = "timeout"
		} else if errors.Is(err, context.Canceled) {
			errType = "canceled"
		}
	}
	tracing.End(span, errType)
}
