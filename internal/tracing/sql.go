package tracing

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// StartStatement starts the client span of one SQL statement (or, with
// more than one, a pipelined batch) under the recording span in ctx. It is
// named by the statement's summary ("SELECT payments", Summary), the
// semantic conventions' low-cardinality name, and a batch by its first
// operation on a table ("BATCH UPDATE payments"), with every
// statement's summary in db.query.summary. The statement's text is not
// recorded: its values are bound apart from it, but the summary says enough
// to find the statement in the store's code, and is safe by construction.
// system is the database's db.system.name ("postgresql", "sqlite"). With
// tracing off or no recording span in ctx it returns ctx and a no-op span,
// having looked at nothing.
func StartStatement(ctx context.Context, system attribute.KeyValue, sql ...string) (context.Context, trace.Span) {
	ctx, span := Start(ctx, "", trace.SpanKindClient)
	if !span.IsRecording() {
		return ctx, span
	}
	span.SetAttributes(system)
	if len(sql) == 1 {
		summary, op, table := Summary(sql[0])
		span.SetName(summary)
		span.SetAttributes(semconv.DBQuerySummary(summary))
		if op != "" {
			span.SetAttributes(semconv.DBOperationName(op))
		}
		if table != "" {
			span.SetAttributes(semconv.DBCollectionName(table))
		}
		return ctx, span
	}
	// A batch: named by the first operation on a table (its first
	// statement is often a setting of the transaction), each statement
	// summarised in db.query.summary.
	name := ""
	parts := make([]string, 0, min(len(sql), maxBatchSummary))
	for i, q := range sql {
		summary, _, _ := Summary(q)
		if f := strings.Fields(summary); name == "" && len(f) >= 2 {
			name = f[0] + " " + f[1]
		}
		if i < maxBatchSummary {
			parts = append(parts, summary)
		}
	}
	if name == "" && len(parts) > 0 {
		name = parts[0]
	}
	span.SetName(join("BATCH", name))
	span.SetAttributes(semconv.DBOperationName("BATCH"), semconv.DBOperationBatchSize(len(sql)),
		semconv.DBQuerySummary(strings.Join(parts, "; ")))
	return ctx, span
}

// maxBatchSummary bounds how many statements a batch's summary names.
const maxBatchSummary = 16

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + " " + b
}

// maxSummaryParts bounds how many operations a statement's summary names.
const maxSummaryParts = 4

// Summary summarises a SQL statement as the OpenTelemetry database
// conventions' db.query.summary does: each operation with the table it
// acts on, in the order written, at any depth ("SELECT payments";
// "INSERT customers INSERT payments UPDATE idempotency_keys" for a WITH
// statement that writes three tables), the names of the statement's own
// common table expressions left out. At most four operations are named,
// each once. A statement that names no table is summarised by its first
// word ("SELECT" for SELECT set_config(...), "SHOW"). When the summary
// names exactly one operation, op and table are it (for db.operation.name
// and db.collection.name); else they are empty. Quoted text and comments
// are skipped; values never appear in a summary.
func Summary(sql string) (summary, op, table string) {
	if v, ok := summaries.Load(sql); ok {
		s := v.(summarized)
		return s.summary, s.op, s.table
	}
	summary, op, table = summarize(sql)
	// The store's statements are constants and a few combinations of the
	// dashboard's filters: a bounded set, each summarised once. Past the
	// bound (statements built otherwise) they are summarised every time.
	if summaryCount.Load() < maxSummaries {
		if _, loaded := summaries.LoadOrStore(sql, summarized{summary, op, table}); !loaded {
			summaryCount.Add(1)
		}
	}
	return summary, op, table
}

// summaries caches Summary's answers by statement.
var (
	summaries    sync.Map // string -> summarized
	summaryCount atomic.Int64
)

// maxSummaries bounds the cache.
const maxSummaries = 4096

type summarized struct{ summary, op, table string }

// summarize is Summary without the cache.
func summarize(sql string) (summary, op, table string) {
	words := sqlWords(sql)
	ctes := map[string]bool{}
	for i := 0; i+2 < len(words); i++ {
		// name AS [NOT] [MATERIALIZED] ( ... ): a common table expression.
		j := i + 1
		if !strings.EqualFold(words[j].text, "AS") {
			continue
		}
		for j+1 < len(words) && (strings.EqualFold(words[j+1].text, "NOT") || strings.EqualFold(words[j+1].text, "MATERIALIZED")) {
			j++
		}
		if j+1 < len(words) && words[j+1].text == "(" {
			ctes[strings.ToLower(words[i].text)] = true
		}
	}
	type part struct{ op, table string }
	var parts []part
	first := ""
	add := func(op, table string) {
		for _, p := range parts {
			if p.op == op && p.table == table {
				return
			}
		}
		parts = append(parts, part{op, table})
	}
	// pending[depth] is what the verb read at that depth waits for before
	// its table: "FROM" or "INTO", or tableNext when the next word is it.
	const tableNext = "="
	pending := map[int]string{}
	verbAt := map[int]string{}
	prev := ""
	for i, w := range words {
		if w.text == "(" || w.text == ")" {
			prev = w.text
			continue
		}
		upper := strings.ToUpper(w.text)
		if i == 0 {
			first = upper
		}
		if pending[w.depth] == tableNext {
			if upper == "ONLY" && !w.quoted {
				continue
			}
			delete(pending, w.depth)
			verb := verbAt[w.depth]
			// Not a parameter or a number. What a SELECT reads may also
			// be a function returning rows (FROM unnest(...)) or one of
			// the statement's own common table expressions, which only
			// a SELECT can name.
			fromSelf := verb == "SELECT" && (i+1 < len(words) && words[i+1].text == "(" || ctes[strings.ToLower(w.text)])
			if isTableName(w) && !fromSelf {
				add(verb, w.text)
			}
			prev = upper
			continue
		}
		if !w.quoted {
			switch upper {
			case "SELECT", "DELETE", "INSERT", "MERGE", "UPDATE":
				// UPDATE is also a word of ON CONFLICT DO UPDATE, SELECT
				// ... FOR [NO KEY] UPDATE; DELETE of ON DELETE.
				if upper == "UPDATE" && (prev == "DO" || prev == "FOR" || prev == "KEY") || upper == "DELETE" && prev == "ON" {
					break
				}
				pending[w.depth], verbAt[w.depth] = map[string]string{
					"SELECT": "FROM", "DELETE": "FROM", "INSERT": "INTO", "MERGE": "INTO", "UPDATE": tableNext,
				}[upper], upper
			case "FROM", "INTO":
				if pending[w.depth] == upper {
					pending[w.depth] = tableNext
				}
			}
		}
		prev = upper
	}
	if len(parts) == 0 {
		return first, first, ""
	}
	if len(parts) > maxSummaryParts {
		parts = parts[:maxSummaryParts]
	}
	if len(parts) == 1 {
		return parts[0].op + " " + parts[0].table, parts[0].op, parts[0].table
	}
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p.op + " " + p.table)
	}
	return b.String(), "", ""
}

// sqlWord is a word of a statement, or a parenthesis, with the depth of
// parentheses it is at.
type sqlWord struct {
	text   string
	depth  int
	quoted bool // a "quoted identifier"
}

// sqlWords splits a statement into words and parentheses, skipping string
// literals, comments, operators and punctuation.
func sqlWords(sql string) []sqlWord {
	var out []sqlWord
	depth := 0
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '(':
			out = append(out, sqlWord{text: "(", depth: depth})
			depth++
			i++
		case c == ')':
			depth--
			out = append(out, sqlWord{text: ")", depth: depth})
			i++
		case c == '\'' || c == '"':
			j := strings.IndexByte(sql[i+1:], c)
			if j < 0 {
				return out
			}
			if c == '"' {
				out = append(out, sqlWord{text: sql[i+1 : i+1+j], depth: depth, quoted: true})
			}
			i += j + 2
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-':
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				return out
			}
			i += j
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			j := strings.Index(sql[i+2:], "*/")
			if j < 0 {
				return out
			}
			i += j + 4
		case isWordByte(c):
			j := i
			for j < len(sql) && isWordByte(sql[j]) {
				j++
			}
			out = append(out, sqlWord{text: sql[i:j], depth: depth})
			i = j
		default:
			i++
		}
	}
	return out
}

// isTableName tells a word that may name a table: not a parameter ($1,
// @name), a number or a keyword that follows FROM in other uses.
func isTableName(w sqlWord) bool {
	if w.quoted {
		return true
	}
	c := w.text[0]
	return (c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') && !strings.EqualFold(w.text, "LATERAL")
}

func isWordByte(c byte) bool {
	return c == '_' || c == '.' || c == '$' || c == '@' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
