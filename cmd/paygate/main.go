// Command paygate is the payment gateway: the HTTP server (serve, demo) and
// the operator's command line (merchants, keys, webhook endpoints).
//
// The command line is a stable contract (decisions.md section 14): exit
// status 0 on success, 2 for a usage error, 1 for any other failure, always
// with exactly one line on stderr when it fails. --json prints one line of
// JSON on stdout.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	// The first signal starts a graceful stop (serve drains for seconds);
	// from then on Ctrl-C has its default effect again, so that a second
	// one ends the process at once. A second SIGTERM is ignored: process
	// supervisors and scripts send it more than once, and it must not cut
	// the drain short (SIGKILL still does).
	context.AfterFunc(ctx, func() {
		signal.Ignore(syscall.SIGTERM)
		stop()
	})
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit statuses of the command line.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// run executes one command line and returns the process exit status. It
// never panics: a panic becomes a one-line error and status 1.
func run(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) int {
	return runWith(ctx, args, env, stdout, stderr, serve)
}

// serveFunc runs the server until ctx is cancelled. Tests replace it to
// observe the configuration that serve and demo would start with.
type serveFunc func(ctx context.Context, cfg serveConfig, stdout, stderr io.Writer) error

// cli is what every command needs: the environment, the output streams and
// the server entry point.
type cli struct {
	env    func(string) string
	stdin  io.Reader // read only by commands that say so (--password-stdin)
	stdout io.Writer
	stderr io.Writer
	serve  serveFunc
}

// command is one leaf of the command tree.
type command struct {
	name    string // "key create"
	summary string
	run     func(ctx context.Context, c *cli, args []string) error
}

// commands lists every command, in the order usage shows them. It is set
// in init because the commands' help reads it.
var commands []command

func init() {
	commands = []command{
		{"serve", "run the HTTP API server", cmdServe},
		{"demo", "run the server on the embedded database; create and print a demo merchant when none exists", cmdDemo},
		{"merchant create", "create a merchant with its test and live, secret and public keys", cmdMerchantCreate},
		{"merchant list", "list the merchants of the database, oldest first", cmdMerchantList},
		{"merchant origins", "show or set the origins allowed to embed a merchant's card fields: show|set --merchant ID --mode M", cmdMerchantOrigins},
		{"key create", "create a secret key for a merchant and mode", cmdKeyCreate},
		{"key list", "list a merchant's keys (secret and public)", cmdKeyList},
		{"key rotate", "replace a key; the old one keeps working for a grace period", cmdKeyRotate},
		{"key revoke", "revoke a key now", cmdKeyRevoke},
		{"webhook set", "set the webhook endpoint of a merchant and mode", cmdWebhookSet},
		{"webhook deliveries", "list a merchant's webhook deliveries and their attempts", cmdWebhookDeliveries},
		{"webhook resend", "deliver an event again, with the same webhook-id", cmdWebhookResend},
		{"webhook test", "send a signed ping event to a merchant's endpoint", cmdWebhookTest},
		{"providers", "print the routing table and each provider's state; drain|restore|set-approval --provider ID", cmdProviders},
		{"vault rewrap", "re-encrypt every stored card under the first --vault-key", cmdVaultRewrap},
		{"guard", "show or set a merchant's card-testing guard rules: show|set --merchant ID --mode M", cmdGuard},
		{"user create", "create a dashboard user of a merchant; the password is read from stdin", cmdUserCreate},
		{"user list", "list a merchant's dashboard users", cmdUserList},
		{"user set-role", "give a dashboard user another role (owner|admin|developer|analyst)", cmdUserSetRole},
		{"user reset-password", "set a dashboard user's password from stdin and sign out its sessions", cmdUserResetPassword},
		{"user disable", "remove a dashboard user: it cannot sign in any more", cmdUserDisable},
		{"user unlock", "lift the lockout of a dashboard user after failed sign-ins", cmdUserUnlock},
		{"bench", "load test: drive concurrent merchant clients against a gateway and report throughput and latency", cmdBench},
		{"version", "print the version, the commit and the Go release of this binary", cmdVersion},
	}
}

func runWith(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer, srv serveFunc) int {
	return runWithStdin(ctx, args, env, os.Stdin, stdout, stderr, srv)
}

// runWithStdin is runWith reading standard input from stdin.
func runWithStdin(ctx context.Context, args []string, env func(string) string, stdin io.Reader, stdout, stderr io.Writer, srv serveFunc) (code int) {
	if env == nil {
		env = func(string) string { return "" }
	}
	name := "" // the command being run, for the error prefix
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintln(stderr, errorLine(name, fmt.Errorf("internal error: %v", r)))
			code = exitFailure
		}
	}()
	c := &cli{env: env, stdin: stdin, stdout: stdout, stderr: stderr, serve: srv}
	cmd, rest, err := lookup(args, stdout)
	if cmd != nil {
		name = cmd.name
		err = cmd.run(ctx, c, rest)
	}
	if err == nil || errors.Is(err, errHelpShown) {
		return exitOK
	}
	fmt.Fprintln(stderr, errorLine(name, err))
	var u *usageError
	if errors.As(err, &u) {
		return exitUsage
	}
	return exitFailure
}

// lookup finds the command that args name and returns it with the
// remaining arguments. Help requests print usage and return errHelpShown.
func lookup(args []string, stdout io.Writer) (*command, []string, error) {
	if len(args) == 0 {
		return nil, nil, usageErrorf("missing command; run 'paygate --help'")
	}
	if isHelp(args[0]) || args[0] == "help" {
		printUsage(stdout, "")
		return nil, nil, errHelpShown
	}
	for i := range commands {
		words := strings.Fields(commands[i].name)
		if args[0] != words[0] {
			continue
		}
		if len(words) == 1 {
			return &commands[i], args[1:], nil
		}
		// A group such as "key": the next argument picks the command.
		if len(args) < 2 {
			return nil, nil, usageErrorf("%s: missing subcommand (%s); run 'paygate %s --help'", words[0], subcommands(words[0]), words[0])
		}
		if isHelp(args[1]) {
			printUsage(stdout, words[0])
			return nil, nil, errHelpShown
		}
		for j := range commands {
			if commands[j].name == words[0]+" "+args[1] {
				return &commands[j], args[2:], nil
			}
		}
		return nil, nil, usageErrorf("%s: unknown subcommand %q (%s); run 'paygate %s --help'", words[0], args[1], subcommands(words[0]), words[0])
	}
	return nil, nil, usageErrorf("unknown command %q; run 'paygate --help'", args[0])
}

func isHelp(arg string) bool { return arg == "-h" || arg == "--help" || arg == "-help" }

// subcommands lists the subcommands of a group, "create|list|...".
func subcommands(group string) string {
	var subs []string
	for _, c := range commands {
		if g, sub, ok := strings.Cut(c.name, " "); ok && g == group {
			subs = append(subs, sub)
		}
	}
	return strings.Join(subs, "|")
}

// printUsage prints the command list, or a group's part of it.
func printUsage(w io.Writer, group string) {
	fmt.Fprintln(w, "Usage: paygate <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands {
		if group != "" && !strings.HasPrefix(c.name, group+" ") {
			continue
		}
		fmt.Fprintf(w, "  %-18s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Every command takes --database-url (default "+defaultDatabaseURL+", env PAYGATE_DATABASE_URL).")
	fmt.Fprintln(w, "Run 'paygate <command> --help' for a command's flags.")
	fmt.Fprintln(w, "Exit status: 0 success, 2 usage error, 1 any other failure.")
}

// usageError is a mistake in the command line: unknown command or flag, a
// missing or malformed flag value, an extra argument. It exits with 2.
type usageError struct{ msg string }

// Error returns the message, without the "paygate: command: " prefix.
func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// errHelpShown reports that --help printed usage: exit 0, nothing on stderr.
var errHelpShown = errors.New("help shown")

// errorLine renders a failure as the one line printed on stderr.
func errorLine(cmd string, err error) string {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if cmd == "" {
		return "paygate: " + msg
	}
	return "paygate: " + cmd + ": " + msg
}
