package postgres

import (
	"context"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/paygate"
)

// TestNamedArgsRewriteLikePgx checks that namedArgs sends what
// pgx.NamedArgs would: the same statement text and the same arguments in
// the same order, for the hot statements and for the edge cases of the
// lexer (a literal, a comment and a cast next to a placeholder).
func TestNamedArgsRewriteLikePgx(t *testing.T) {
	args := map[string]any{}
	for i, name := range []string{"id", "merchant_id", "mode", "key", "now", "from", "to", "x"} {
		args[name] = i
	}
	statements := map[string]string{
		"reserveIdempotency":    reserveIdempotency,
		"createPayment":         createPayment,
		"createReservedPayment": createReservedPayment,
		"transitionPayment":     transitionPayment,
		"transitionInUnit":      transitionInUnit,
		"edges": `SELECT '@not_a_name', @x::text[], "@quoted" -- @comment
			FROM t WHERE a = @x AND b = @missing AND c = @id`,
	}
	for name, sql := range statements {
		wantSQL, wantArgs, err := pgx.NamedArgs(args).RewriteQuery(context.Background(), nil, sql, nil)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second time from the cache
			gotSQL, gotArgs, err := namedArgs(args).RewriteQuery(context.Background(), nil, sql, nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if gotSQL != wantSQL || !reflect.DeepEqual(gotArgs, wantArgs) {
				t.Fatalf("%s: got\n%s %v\nwant\n%s %v", name, gotSQL, gotArgs, wantSQL, wantArgs)
			}
		}
	}
}

func BenchmarkNamedArgs(b *testing.B) {
	args := transitionArgs(paygate.PaymentTransition{
		ID: "p", MerchantID: "m", Mode: paygate.ModeTest, From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentCaptured,
	}, nil, nil)
	b.Run("pgx", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _, _ = pgx.NamedArgs(args).RewriteQuery(context.Background(), nil, transitionPayment, nil)
		}
	})
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _, _ = args.RewriteQuery(context.Background(), nil, transitionPayment, nil)
		}
	})
}
