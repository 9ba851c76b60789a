package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/guard"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/paygate"
)

// openGuard returns the card-testing guard of serve: its counters in Redis
// when redisURL is set (shared by every node), in this process otherwise;
// its settings read from st on every payment. The returned function
// closes the Redis client.
func openGuard(redisURL string, st paygate.Store, clock paygate.Clock, log *slog.Logger, mx *metrics.Metrics) (*guard.Guard, func() error, error) {
	var counter guard.Counter = guard.NewMemory()
	closeCounter := func() error { return nil }
	if redisURL != "" {
		r, closeRedis, err := guard.Open(redisURL)
		if err != nil {
			return nil, nil, fmt.Errorf("card-testing guard: %w", err)
		}
		counter, closeCounter = r, closeRedis
	}
	g := guard.New(guard.Config{Settings: st, Counter: counter, Clock: clock, Logger: log, Metrics: mx})
	return g, closeCounter, nil
}

// guardJSON is the --json output of guard show and guard set (decisions
// §20): durations as Go duration strings, one rule per entry in the order
// card_ip, card, customer, ip_cards.
type guardJSON struct {
	Mode  string          `json:"mode"`
	Rules []guardRuleJSON `json:"rules"`
}

type guardRuleJSON struct {
	Rule      string `json:"rule"`
	Enabled   bool   `json:"enabled"`
	Threshold int    `json:"threshold"`
	Window    string `json:"window"`
	Block     string `json:"block"`
}

func toGuardJSON(s paygate.GuardSettings) guardJSON {
	out := guardJSON{Mode: string(s.Mode), Rules: []guardRuleJSON{}}
	for _, r := range s.Rules {
		out.Rules = append(out.Rules, guardRuleJSON{Rule: string(r.Rule), Enabled: r.Enabled, Threshold: r.Threshold,
			Window: r.Window.String(), Block: r.Block.String()})
	}
	return out
}

// cmdGuard runs guard show and guard set.
func cmdGuard(ctx context.Context, c *cli, args []string) error {
	if len(args) == 0 {
		return usageErrorf("missing subcommand (show|set); run 'paygate guard --help'")
	}
	if isHelp(args[0]) {
		fmt.Fprintln(c.stdout, "Usage: paygate guard show|set --merchant ID --mode test|live [--rule R --enabled=B --threshold N --window D --block D] [--json]")
		fmt.Fprintln(c.stdout, "Rules: card_ip, card, customer, ip_cards. Run 'paygate guard show --help' or 'paygate guard set --help' for the flags.")
		return errHelpShown
	}
	switch args[0] {
	case "show":
		return cmdGuardShow(ctx, c, args[1:])
	case "set":
		return cmdGuardSet(ctx, c, args[1:])
	}
	return usageErrorf("unknown subcommand %q (show|set); run 'paygate guard --help'", args[0])
}

func cmdGuardShow(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("guard", "show --merchant ID --mode test|live [--json] [--database-url URL]")
	var dbURL, merchantID, mode string
	var asJSON bool
	fs.databaseURL(&dbURL)
	fs.StringVar(&merchantID, "merchant", "", "merchant `ID` (required)")
	fs.Var(modeFlag{&mode}, "mode", "the mode, `test|live` (required)")
	fs.BoolVar(&asJSON, "json", false, "print the rules as one line of JSON")
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := required(fs, "merchant", "mode"); err != nil {
		return err
	}
	var set paygate.GuardSettings
	err := withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		if _, err := merchantByID(ctx, st, merchantID); err != nil {
			return err
		}
		var err error
		set, err = st.GuardSettings(ctx, merchantID, paygate.Mode(mode))
		return err
	})
	if err != nil {
		return err
	}
	return printGuard(c, set, asJSON)
}

func printGuard(c *cli, set paygate.GuardSettings, asJSON bool) error {
	if asJSON {
		return writeJSON(c.stdout, toGuardJSON(set))
	}
	fmt.Fprintf(c.stdout, "Card-testing guard of merchant %s, %s mode:\n", set.MerchantID, set.Mode)
	fmt.Fprintf(c.stdout, "  %-9s %-8s %-9s %-8s %s\n", "RULE", "ENABLED", "THRESHOLD", "WINDOW", "BLOCK")
	for _, r := range set.Rules {
		fmt.Fprintf(c.stdout, "  %-9s %-8t %-9d %-8s %s\n", r.Rule, r.Enabled, r.Threshold, shortDuration(r.Window), shortDuration(r.Block))
	}
	return nil
}

// optionalBool is --enabled: a boolean flag that says whether it was given.
type optionalBool struct {
	v   *bool
	set *bool
}

func (b optionalBool) String() string {
	if b.v == nil {
		return ""
	}
	return strconv.FormatBool(*b.v)
}

func (b optionalBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("must be true or false")
	}
	*b.v, *b.set = v, true
	return nil
}

func (b optionalBool) IsBoolFlag() bool { return true }

func cmdGuardSet(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("guard", "set --merchant ID --mode test|live --rule R [--enabled=B] [--threshold N] [--window D] [--block D] [--json] [--database-url URL]")
	var dbURL, merchantID, mode, rule, window, block string
	var enabled, enabledSet, asJSON bool
	threshold := -1
	fs.databaseURL(&dbURL)
	fs.StringVar(&merchantID, "merchant", "", "merchant `ID` (required)")
	fs.Var(modeFlag{&mode}, "mode", "the mode, `test|live` (required)")
	fs.StringVar(&rule, "rule", "", "the rule to change: `card_ip|card|customer|ip_cards` (required)")
	fs.Var(optionalBool{&enabled, &enabledSet}, "enabled", "switch the rule on or off (`--enabled=true|false`)")
	fs.IntVar(&threshold, "threshold", -1, fmt.Sprintf("declines within the window that reach the provider before the next attempt is blocked, `N` (1 to %d)", paygate.MaxGuardThreshold))
	fs.StringVar(&window, "window", "", "the sliding window the declines are counted over, a Go `duration` (1s to 720h)")
	fs.StringVar(&block, "block", "", "how long a block lasts, a Go `duration` (1s to 720h)")
	fs.BoolVar(&asJSON, "json", false, "print the rules after the change as one line of JSON")
	fs.notes = "Flags not given keep their current value. The change is audited (actor cli) and takes effect on the next payment, on every node.\n" +
		"Example: paygate guard set --merchant ID --mode test --rule card_ip --enabled=true --threshold 3 --window 1h --block 1h"
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := required(fs, "merchant", "mode", "rule"); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["enabled"] && !given["threshold"] && !given["window"] && !given["block"] {
		return usageErrorf("nothing to change: give --enabled, --threshold, --window or --block (see 'paygate guard set --help')")
	}
	change := paygate.GuardRuleSettings{Rule: paygate.GuardRule(rule)}
	if e := asError(change.Validate()); e != nil && e.Param == "rule" {
		return usageErrorf("--rule: must be one of %s", ruleNames())
	}
	var win, blk time.Duration
	var err error
	if given["window"] {
		if win, err = time.ParseDuration(window); err != nil {
			return usageErrorf("--window: %q is not a duration (e.g. 10m, 1h)", window)
		}
	}
	if given["block"] {
		if blk, err = time.ParseDuration(block); err != nil {
			return usageErrorf("--block: %q is not a duration (e.g. 30m, 1h)", block)
		}
	}

	var set paygate.GuardSettings
	err = withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		if _, err := merchantByID(ctx, st, merchantID); err != nil {
			return err
		}
		cur, err := st.GuardSettings(ctx, merchantID, paygate.Mode(mode))
		if err != nil {
			return err
		}
		r := cur.Rule(paygate.GuardRule(rule))
		if given["enabled"] {
			r.Enabled = enabled
		}
		if given["threshold"] {
			r.Threshold = threshold
		}
		if given["window"] {
			r.Window = win
		}
		if given["block"] {
			r.Block = blk
		}
		if e := asError(r.Validate()); e != nil {
			return usageErrorf("--%s: %s", e.Param, e.Message)
		}
		at := now()
		ch := paygate.GuardChange{MerchantID: merchantID, Mode: paygate.Mode(mode), Settings: r, At: at}
		audit := paygate.AuditEntry{ID: id.New(), MerchantID: merchantID, Mode: paygate.Mode(mode),
			Email: paygate.AuditActorCLI, Action: paygate.AuditGuardChanged, Target: rule, Detail: ch.Describe(), CreatedAt: at}
		if err := st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{ch, audit}}); err != nil {
			if paygate.IsNotFound(err) {
				return fmt.Errorf("merchant not found: %s", merchantID)
			}
			return fmt.Errorf("change the guard: %w", err)
		}
		set, err = st.GuardSettings(ctx, merchantID, paygate.Mode(mode))
		return err
	})
	if err != nil {
		return err
	}
	return printGuard(c, set, asJSON)
}

// asError returns err as a *paygate.Error, nil when it is none.
func asError(err error) *paygate.Error {
	var e *paygate.Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

func ruleNames() string {
	var names []string
	for _, r := range paygate.GuardRules {
		names = append(names, string(r))
	}
	return strings.Join(names, ", ")
}
