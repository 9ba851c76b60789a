package main

import (
	"context"
	"log/slog"

	"github.com/paygate/paygate/internal/paygate"
)

// installLog is the logger of changes made through the command line that
// concern the whole installation and no merchant (vault rewrap, providers
// drain and restore). The audit log is a merchant's (every entry belongs
// to one, and the dashboard shows it to that merchant's team), so these
// changes are logged instead: one line at INFO on the process's standard
// logger (stderr by default), with actor "cli". Tests replace it.
var installLog = slog.Default

// logInstallChange logs an installation-wide change made through the
// command line. attrs name what changed; never a key or a secret.
func logInstallChange(ctx context.Context, action string, attrs ...slog.Attr) {
	all := append([]slog.Attr{slog.String("actor", paygate.AuditActorCLI), slog.String("action", action)}, attrs...)
	installLog().LogAttrs(ctx, slog.LevelInfo, "paygate: installation changed", all...)
}
