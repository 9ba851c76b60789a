package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider"
)

// --- paygate providers set-approval --provider ID --rate R | --clear ---------

// approvalOutput is the --json output of set-approval.
type approvalOutput struct {
	Provider string `json:"provider"`
	// ApprovalRate is the operator's override now stored, null when
	// cleared; ConfiguredRate is the configuration's sandbox.approvalRate,
	// in force when there is no override.
	ApprovalRate   *float64 `json:"approvalRate"`
	ConfiguredRate float64  `json:"configuredRate"`
	ChangedAt      string   `json:"changedAt"`
}

const approvalSynopsis = "--provider ID (--rate R | --clear) [--json] [--config FILE] [--database-url URL]"

const approvalNotes = "R is from 0 to 1: the share of cards outside the test-card table that the sandbox authorizes\n" +
	"(the others are declined with generic_decline). Every serve node applies it within a second;\n" +
	"--clear puts the configuration's sandbox.approvalRate back. Sandbox providers only."

// cmdProviderSetApproval stores a sandbox provider's approval rate
// override (decisions.md section 21), for routing experiments: a provider
// may "degrade" mid-run on every node.
func cmdProviderSetApproval(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("providers set-approval", approvalSynopsis)
	fs.summary = "change a sandbox provider's approval rate on every node, for routing experiments"
	fs.notes = approvalNotes
	var dbURL, configFile, id, rateText string
	var clear, asJSON bool
	fs.databaseURL(&dbURL)
	fs.StringVar(&configFile, "config", "", "operator configuration `FILE` (as given to serve)")
	fs.envFlags = append(fs.envFlags, "config")
	fs.StringVar(&id, "provider", "", "sandbox provider `ID` (required)")
	fs.StringVar(&rateText, "rate", "", "approval rate `R`, from 0 to 1")
	fs.BoolVar(&clear, "clear", false, "remove the override: the configured rate is back")
	fs.BoolVar(&asJSON, "json", false, "print the result as one line of JSON")
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := required(fs, "provider"); err != nil {
		return err
	}
	var rate *float64
	switch {
	case clear && rateText != "":
		return usageErrorf("give --rate or --clear, not both (see 'paygate providers set-approval --help')")
	case !clear && rateText == "":
		return usageErrorf("missing required flag --rate (or --clear) (see 'paygate providers set-approval --help')")
	case !clear:
		r, err := parseApprovalRate(rateText)
		if err != nil {
			return err
		}
		rate = &r
	}
	_, router, err := routingOf(configFile)
	if err != nil {
		return err
	}
	target, err := overridableProvider(router, id)
	if err != nil {
		return err
	}
	configured := target.ApprovalRate() // a fresh router: no override applied
	var st paygate.ProviderState
	err = withStore(ctx, dbURL, func(ctx context.Context, s paygate.Store) error {
		if err := s.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.SandboxApproval{ProviderID: id, Rate: rate, At: now()}}}); err != nil {
			return fmt.Errorf("set the approval rate of %s: %w", id, err)
		}
		states, err := s.ProviderStates(ctx)
		if err != nil {
			return fmt.Errorf("set the approval rate of %s: %w", id, err)
		}
		for _, ps := range states {
			if ps.ProviderID == id {
				st = ps
				return nil
			}
		}
		return fmt.Errorf("set the approval rate of %s: the provider's state was not stored", id)
	})
	if err != nil {
		return err
	}
	// No merchant's change: logged, not audited (see installLog).
	if rate != nil {
		logInstallChange(ctx, "provider.approval_set", slog.String("provider", id), slog.Float64("approval_rate", *rate),
			slog.String("database", redactURL(dbURL)))
	} else {
		logInstallChange(ctx, "provider.approval_cleared", slog.String("provider", id), slog.String("database", redactURL(dbURL)))
	}
	changed := now()
	if st.ApprovalAt != nil {
		changed = *st.ApprovalAt
	}
	if asJSON {
		return writeJSON(c.stdout, approvalOutput{Provider: id, ApprovalRate: st.ApprovalRate, ConfiguredRate: configured, ChangedAt: formatTime(changed)})
	}
	if rate != nil {
		_, err = fmt.Fprintf(c.stdout, "Provider %s approves %s of the cards outside the test-card table (configured: %s); every serve node applies it within a second.\n"+
			"Undo with 'paygate providers set-approval --provider %s --clear'.\n", id, formatRate(*rate), formatRate(configured), id)
	} else {
		_, err = fmt.Fprintf(c.stdout, "Provider %s has no approval override: every serve node is back to the configured %s within a second.\n", id, formatRate(configured))
	}
	return err
}

// parseApprovalRate reads --rate: a number from 0 to 1.
func parseApprovalRate(s string) (float64, error) {
	r, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(r) || r < 0 || r > 1 {
		return 0, usageErrorf("invalid value %q for --rate: must be a number from 0 to 1 (see 'paygate providers set-approval --help')", s)
	}
	return r, nil
}

// overridableProvider returns the provider id of the routing table when it
// takes an approval rate (a sandbox). An unknown id or a provider of
// another kind fails (exit 1, as a drain's of an unknown id): the command
// line is well formed, the provider is not one the command applies to
// (decisions §14: exit 2 is for usage errors only).
func overridableProvider(router *provider.Router, id string) (provider.ApprovalOverrider, error) {
	var known []string
	kind := ""
	for _, s := range router.Statuses() {
		if !slices.Contains(known, s.ID) {
			known = append(known, s.ID)
		}
		if s.ID == id {
			kind = s.Kind
		}
	}
	if !slices.Contains(known, id) {
		sort.Strings(known)
		return nil, fmt.Errorf("no provider %q in the routing table (known: %s); give the --config that serve uses", id, strings.Join(known, ", "))
	}
	for _, mode := range []paygate.Mode{paygate.ModeTest, paygate.ModeLive} {
		if o, ok := router.Overridable(mode, id); ok {
			return o, nil
		}
	}
	if kind == "" {
		kind = "not a sandbox"
	}
	return nil, fmt.Errorf("provider %q (%s) takes no approval rate: only sandbox providers do", id, kind)
}

// formatRate writes a rate as a percentage, "95%" or "62.5%".
func formatRate(r float64) string {
	return strconv.FormatFloat(r*100, 'f', -1, 64) + "%"
}
