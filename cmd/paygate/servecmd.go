package main

import "context"

func cmdServe(ctx context.Context, c *cli, args []string) error {
	cfg, err := parseServeConfig("serve", args, c)
	if err != nil {
		return err
	}
	return runServer(ctx, c, cfg)
}

// parseServeConfig reads the flags and environment of serve or demo.
func parseServeConfig(name string, args []string, c *cli) (serveConfig, error) {
	fs := newFlagSet(name, serveSynopsis)
	var cfg serveConfig
	finish := serveFlags(fs, &cfg)
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return serveConfig{}, err
	}
	if err := finish(); err != nil {
		return serveConfig{}, err
	}
	cfg.Traces = traceSettingsFromEnv(c.env)
	return cfg, nil
}

// runServer runs the server until ctx is cancelled.
func runServer(ctx context.Context, c *cli, cfg serveConfig) error {
	return c.serve(ctx, cfg, c.stdout, c.stderr)
}
