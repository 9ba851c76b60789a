package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// originsJSON is the --json output of merchant origins show and set: the
// mode and its allowed origins, normalized, in their order ([] for none).
type originsJSON struct {
	Mode    string   `json:"mode"`
	Origins []string `json:"origins"`
}

// cmdMerchantOrigins runs merchant origins show and merchant origins set
// (decisions §19).
func cmdMerchantOrigins(ctx context.Context, c *cli, args []string) error {
	if len(args) == 0 {
		return usageErrorf("missing subcommand (show|set); run 'paygate merchant origins --help'")
	}
	if isHelp(args[0]) {
		fmt.Fprintln(c.stdout, "Usage: paygate merchant origins show|set --merchant ID --mode test|live [--origins a,b] [--json]")
		fmt.Fprintln(c.stdout, "The origins (scheme://host[:port]) whose pages may embed the card fields of paygate.js.")
		fmt.Fprintln(c.stdout, "Run 'paygate merchant origins show --help' or 'paygate merchant origins set --help' for the flags.")
		return errHelpShown
	}
	switch args[0] {
	case "show":
		return cmdOriginsShow(ctx, c, args[1:])
	case "set":
		return cmdOriginsSet(ctx, c, args[1:])
	}
	return usageErrorf("unknown subcommand %q (show|set); run 'paygate merchant origins --help'", args[0])
}

func cmdOriginsShow(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("merchant origins", "show --merchant ID --mode test|live [--json] [--database-url URL]")
	var dbURL, merchantID, mode string
	var asJSON bool
	fs.databaseURL(&dbURL)
	fs.StringVar(&merchantID, "merchant", "", "merchant `ID` (required)")
	fs.Var(modeFlag{&mode}, "mode", "the mode, `test|live` (required)")
	fs.BoolVar(&asJSON, "json", false, "print the origins as one line of JSON")
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := required(fs, "merchant", "mode"); err != nil {
		return err
	}
	var origins []string
	err := withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		if _, err := merchantByID(ctx, st, merchantID); err != nil {
			return err
		}
		var err error
		origins, err = st.AllowedOrigins(ctx, merchantID, paygate.Mode(mode))
		return err
	})
	if err != nil {
		return err
	}
	return printOrigins(c, merchantID, paygate.Mode(mode), origins, asJSON)
}

func printOrigins(c *cli, merchantID string, mode paygate.Mode, origins []string, asJSON bool) error {
	if asJSON {
		if origins == nil {
			origins = []string{}
		}
		return writeJSON(c.stdout, originsJSON{Mode: string(mode), Origins: origins})
	}
	fmt.Fprintf(c.stdout, "Origins allowed to embed the card fields of merchant %s, %s mode:\n", merchantID, mode)
	if len(origins) == 0 {
		fmt.Fprintln(c.stdout, "  (none)")
	}
	for _, o := range origins {
		fmt.Fprintf(c.stdout, "  %s\n", o)
	}
	if mode == paygate.ModeTest {
		fmt.Fprintf(c.stdout, "Test mode always allows %s too.\n", strings.Join(paygate.TestModeFrameOrigins, " and "))
	}
	return nil
}

func cmdOriginsSet(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("merchant origins", "set --merchant ID --mode test|live --origins a,b [--json] [--database-url URL]")
	var dbURL, merchantID, mode, list string
	var asJSON bool
	fs.databaseURL(&dbURL)
	fs.StringVar(&merchantID, "merchant", "", "merchant `ID` (required)")
	fs.Var(modeFlag{&mode}, "mode", "the mode, `test|live` (required)")
	fs.StringVar(&list, "origins", "", fmt.Sprintf("the allowed `origins`, comma-separated scheme://host[:port] (https only in live mode; at most %d); empty clears them (required)", paygate.MaxAllowedOrigins))
	fs.BoolVar(&asJSON, "json", false, "print the origins after the change as one line of JSON")
	fs.notes = "The list replaces the one stored. The change is audited (actor cli) and applies to the next card frame loaded.\n" +
		"Example: paygate merchant origins set --merchant ID --mode live --origins https://shop.example,https://www.shop.example"
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := required(fs, "merchant", "mode"); err != nil {
		return err
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "origins" })
	if !given {
		return usageErrorf("missing required flag --origins (give --origins= to clear the list)")
	}
	var raw []string
	for _, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) != "" {
			raw = append(raw, s)
		}
	}
	origins, err := paygate.NormalizeOrigins(paygate.Mode(mode), raw)
	if e := asError(err); e != nil {
		return usageErrorf("--origins: %s", e.Message)
	}
	err = withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		if _, err := merchantByID(ctx, st, merchantID); err != nil {
			return err
		}
		at := now()
		ch := paygate.OriginsChange{MerchantID: merchantID, Mode: paygate.Mode(mode), Origins: origins, At: at}
		audit := paygate.AuditEntry{ID: id.New(), MerchantID: merchantID, Mode: paygate.Mode(mode),
			Email: paygate.AuditActorCLI, Action: paygate.AuditOriginsChanged, Detail: ch.Describe(), CreatedAt: at}
		if err := st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{ch, audit}}); err != nil {
			if paygate.IsNotFound(err) {
				return fmt.Errorf("merchant not found: %s", merchantID)
			}
			return fmt.Errorf("set the origins: %w", err)
		}
		origins, err = st.AllowedOrigins(ctx, merchantID, paygate.Mode(mode))
		return err
	})
	if err != nil {
		return err
	}
	return printOrigins(c, merchantID, paygate.Mode(mode), origins, asJSON)
}
