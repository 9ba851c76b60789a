package sqlite

import (
	"context"
	"errors"
	"strconv"
	"strings"

	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"modernc.org/sqlite"

	"github.com/paygate/paygate/internal/tracing"
)

// Spans of the SQLite engine, as many as PostgreSQL's one per round trip:
// each statement a request or a webhook delivery runs on the read pool
// gets a client span (stmtCacheConn, the driver connection every statement
// goes through), and each write transaction one span (submit) that covers
// its wait for the writer, its statements and the group's commit, where a
// write spends its time. The writer's statements get none: a span each,
// seven more for a payment, cost the server a third more CPU per request
// under bench --traces, for little more insight than the transaction's. Without a
// recording span in the context nothing is started: one atomic load when
// tracing is off.

var dbSystem = semconv.DBSystemNameSQLite

// startStatement starts the span of one statement on a traced connection.
func (c *stmtCacheConn) startStatement(ctx context.Context, query string) (context.Context, trace.Span) {
	if !c.traced || !tracing.Active(ctx) {
		return ctx, nil
	}
	return tracing.StartStatement(ctx, dbSystem, query)
}

// startWrite starts the span of a write transaction.
func startWrite(ctx context.Context, lazy bool) trace.Span {
	if !tracing.Active(ctx) {
		return nil
	}
	_, span := tracing.Start(ctx, "sqlite write transaction", trace.SpanKindInternal)
	span.SetAttributes(dbSystem, tracing.LazyCommitKey.Bool(lazy))
	return span
}

// endSpan ends a span of this file (nil: none was started), failed with the
// SQLite result code of an engine's error, never its message.
func endSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	errType := ""
	if err != nil {
		errType = "error"
		var se *sqlite.Error
		switch {
		case errors.As(err, &se):
			errType = sqliteCode(se.Code())
		case errors.Is(err, context.DeadlineExceeded):
			errType = "timeout"
		case errors.Is(err, context.Canceled):
			errType = "canceled"
		}
	}
	tracing.End(span, errType)
}

// sqliteCode names a SQLite result code (SQLITE_CONSTRAINT_UNIQUE).
func sqliteCode(code int) string {
	// The driver's text ends in the code's name: "... (SQLITE_BUSY)".
	if text, ok := sqlite.ErrorCodeString[code]; ok {
		if i := strings.LastIndexByte(text, '('); i >= 0 && strings.HasSuffix(text, ")") {
			return text[i+1 : len(text)-1]
		}
	}
	return "SQLITE_" + strconv.Itoa(code)
}
