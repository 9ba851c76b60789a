package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/paygate/paygate/internal/clientaddr"
	"github.com/paygate/paygate/internal/webhook"
)

// serveConfig is the configuration of serve and demo, from flags, the
// environment (PAYGATE_<FLAG>) and defaults, in that order of precedence.
// Its LogValue masks every secret, so it may be logged whole.
type serveConfig struct {
	DatabaseURL              string
	Addr                     string          // --addr, default 127.0.0.1:8080
	BaseURL                  string          // --base-url, default "http://" + Addr
	RedisURL                 string          // --redis-url, default ""
	ConfigFile               string          // --config, default ""
	WebhookRetrySchedule     []time.Duration // --webhook-retry-schedule, default 0s,5s,5m,30m,2h,5h,10h,14h,20h,24h
	RateLimitTest            int             // --rate-limit-test 100
	RateLimitLive            int             // --rate-limit-live 1000
	RateLimitUnauthenticated int             // --rate-limit-unauthenticated 60
	RateLimitTokens          int             // --rate-limit-tokens 300 (per public key)
	RateLimitTokensPerAddr   int             // --rate-limit-tokens-per-address 30
	VaultKeys                []string        // --vault-key KEY[,KEY...]
	ThreeDSChallengeTTL      time.Duration   // --3ds-challenge-ttl 30m
	RecoveryInterval         time.Duration   // --recovery-interval 5s
	LogLevel                 string          // --log-level info (debug|info|warn|error)
	DashboardSessionIdle     time.Duration   // --session-idle-timeout 15m (alias --dashboard-session-idle)
	DashboardSessionMax      time.Duration   // --dashboard-session-max 12h
	RequireMFA               bool            // --require-mfa: every dashboard user signs in with TOTP
	PprofAddr                string          // --pprof, default "" (off); loopback host:port only
	MetricsAddr              string          // --metrics-addr, default "" (off; demo 127.0.0.1:9464)

	// Hostile input (decisions §15).
	MaxConnections int                // --max-connections 4096
	TrustedProxies clientaddr.Proxies // --trusted-proxies CIDR[,CIDR...], default none
	// AllowPrivateTestWebhooks (--allow-private-test-webhooks, default
	// true) lets test-mode webhook endpoints be local; false applies the
	// live-mode address guard to them too (decisions.md section 15).
	AllowPrivateTestWebhooks bool

	// Serving in production (decisions §16).
	TLSCert         string        // --tls-cert FILE, default "" (plain HTTP)
	TLSKey          string        // --tls-key FILE, given with --tls-cert
	LogFormat       string        // --log-format json|text, default "" (text on a terminal, json otherwise)
	DrainDelay      time.Duration // --drain-delay 5s
	ShutdownTimeout time.Duration // --shutdown-timeout 30s

	// Traces are the OTEL_* variables of the environment (tracing.go).
	Traces traceSettings
}

// scheme is the scheme serve answers on: https with a TLS pair.
func (c *serveConfig) scheme() string {
	if c.TLSCert != "" {
		return "https"
	}
	return "http"
}

// Defaults of serve's flags (decisions.md sections 6, 8, 9, 11, 14).
const (
	defaultAddr                     = "127.0.0.1:8080"
	defaultRateLimitTest            = 100
	defaultRateLimitLive            = 1000
	defaultRateLimitUnauthenticated = 60
	defaultRateLimitTokens          = 300 // httpapi.DefaultRateLimitTokens
	defaultRateLimitTokensPerAddr   = 30  // httpapi.DefaultRateLimitTokensPerAddr
	defaultThreeDSChallengeTTL      = 30 * time.Minute
	defaultRecoveryInterval         = 5 * time.Second
	defaultLogLevel                 = "info"
	defaultDashboardSessionIdle     = 15 * time.Minute
	defaultDashboardSessionMax      = 12 * time.Hour
	defaultMaxConnections           = 4096
	defaultDrainDelay               = 5 * time.Second
	defaultShutdownTimeout          = 30 * time.Second
	// maxRetrySchedule bounds the number of delivery attempts.
	maxRetrySchedule = 50
)

// serveSynopsis is the usage line of serve and demo.
const serveSynopsis = "[--database-url URL] [--addr 127.0.0.1:8080] [--base-url URL] [--redis-url URL] [--config FILE]\n" +
	"        [--webhook-retry-schedule 0s,5s,5m,...] [--rate-limit-test 100] [--rate-limit-live 1000]\n" +
	"        [--rate-limit-unauthenticated 60] [--rate-limit-tokens 300] [--rate-limit-tokens-per-address 30]\n" +
	"        [--vault-key KEY[,KEY...]]\n" +
	"        [--3ds-challenge-ttl 30m] [--recovery-interval 5s] [--log-level info] [--pprof 127.0.0.1:6060]\n" +
	"        [--metrics-addr HOST:PORT]\n" +
	"        [--session-idle-timeout 15m] [--dashboard-session-max 12h] [--require-mfa]\n" +
	"        [--max-connections 4096] [--trusted-proxies CIDR[,CIDR...]] [--allow-private-test-webhooks=true]\n" +
	"        [--tls-cert FILE --tls-key FILE] [--log-format json|text] [--drain-delay 5s] [--shutdown-timeout 30s]"

// serveNotes closes the help of serve and demo.
const serveNotes = "Every flag also reads the environment variable PAYGATE_<FLAG> (PAYGATE_ADDR,\n" +
	"PAYGATE_3DS_CHALLENGE_TTL, PAYGATE_VAULT_KEY, ...); an explicit flag wins over the environment.\n" +
	"PAYGATE_<FLAG>_FILE instead names a file holding the value (a container secret: /run/secrets/...)."

// serveFlags registers serve's flags on fs, every one also read from the
// environment, and returns a function that finishes the configuration
// after parsing (derived defaults) and validates it.
func serveFlags(fs *flagSet, c *serveConfig) (finish func() error) {
	fs.notes = serveNotes
	fs.databaseURL(&c.DatabaseURL)
	fs.StringVar(&c.Addr, "addr", defaultAddr, "`host:port` to listen on (port 0 picks a free one)")
	fs.StringVar(&c.BaseURL, "base-url", "", "public base `URL` of the service, used in 3-D Secure links (default http://ADDR)")
	fs.StringVar(&c.RedisURL, "redis-url", "", "Redis `URL` (redis://...) for rate limits, card-testing counters and success-rate routing scores shared by every instance (default: per process)")
	fs.StringVar(&c.ConfigFile, "config", "", "operator configuration `FILE` (provider routes and credentials)")
	c.WebhookRetrySchedule = webhook.DefaultSchedule()
	fs.Var(&durationList{list: &c.WebhookRetrySchedule}, "webhook-retry-schedule", "wait before each webhook delivery attempt, comma-separated `durations`")
	fs.IntVar(&c.RateLimitTest, "rate-limit-test", defaultRateLimitTest, "requests per minute per test key")
	fs.IntVar(&c.RateLimitLive, "rate-limit-live", defaultRateLimitLive, "requests per minute per live key")
	fs.IntVar(&c.RateLimitUnauthenticated, "rate-limit-unauthenticated", defaultRateLimitUnauthenticated, "failed authentications per minute per client address before 429")
	fs.IntVar(&c.RateLimitTokens, "rate-limit-tokens", defaultRateLimitTokens, "card tokens (POST /v1/tokens) per minute per public key")
	fs.IntVar(&c.RateLimitTokensPerAddr, "rate-limit-tokens-per-address", defaultRateLimitTokensPerAddr, "card tokens (POST /v1/tokens) per minute per client address")
	fs.Var(&stringList{list: &c.VaultKeys}, "vault-key", "card vault master `KEY[,KEY...]`, base64 of 32 bytes; the first encrypts, all decrypt")
	fs.DurationVar(&c.ThreeDSChallengeTTL, "3ds-challenge-ttl", defaultThreeDSChallengeTTL, "lifetime of a 3-D Secure challenge")
	fs.DurationVar(&c.RecoveryInterval, "recovery-interval", defaultRecoveryInterval, "how often unfinished payments are recovered")
	fs.StringVar(&c.LogLevel, "log-level", defaultLogLevel, "log `level`: debug, info, warn or error")
	fs.DurationVar(&c.DashboardSessionIdle, "session-idle-timeout", defaultDashboardSessionIdle, "a dashboard session ends after this long without a request")
	// The older name stays, as an alias (decisions.md section 17).
	fs.DurationVar(&c.DashboardSessionIdle, "dashboard-session-idle", defaultDashboardSessionIdle, "the older name of --session-idle-timeout")
	fs.DurationVar(&c.DashboardSessionMax, "dashboard-session-max", defaultDashboardSessionMax, "a dashboard session ends this long after sign-in, whatever the activity")
	fs.BoolVar(&c.RequireMFA, "require-mfa", false, "every dashboard user must sign in with a TOTP code; users without one enrol after their password")
	// The new name's variable comes last: it wins over the older one.
	fs.envFlags = append(fs.envFlags, "dashboard-session-idle", "session-idle-timeout", "dashboard-session-max", "require-mfa")
	fs.StringVar(&c.PprofAddr, "pprof", "", "loopback `host:port` serving net/http/pprof on a separate listener (default: off)")
	fs.envFlags = append(fs.envFlags, "pprof")
	metricsFlag(fs, &c.MetricsAddr)
	fs.IntVar(&c.MaxConnections, "max-connections", defaultMaxConnections, "most connections open at once; more wait to be accepted")
	fs.Var(proxyList{&c.TrustedProxies}, "trusted-proxies", "reverse proxies whose X-Forwarded-For names the client, `CIDR[,CIDR...]` (a bare address is one host; default: none, the header is ignored)")
	fs.envFlags = append(fs.envFlags, "max-connections", "trusted-proxies")
	allowPrivateTestWebhooksFlag(fs, &c.AllowPrivateTestWebhooks)
	fs.StringVar(&c.TLSCert, "tls-cert", "", "serve HTTPS only, with the certificate (chain) in PEM `FILE`; re-read when it changes (with --tls-key)")
	fs.StringVar(&c.TLSKey, "tls-key", "", "the private key of --tls-cert, PEM `FILE`; re-read when it changes")
	fs.StringVar(&c.LogFormat, "log-format", "", "log `format`: json or text (default: text on a terminal, json otherwise)")
	// demo runs on a developer's machine, with no load balancer to tell:
	// Ctrl-C stops it without a drain delay.
	drainDelay := defaultDrainDelay
	if fs.name == "demo" {
		drainDelay = 0
	}
	fs.DurationVar(&c.DrainDelay, "drain-delay", drainDelay, "on SIGTERM, how long /readyz answers 503 while new connections are still served, before the listener closes")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", defaultShutdownTimeout, "after the drain delay, how long in-flight requests get to finish")
	fs.envFlags = append(fs.envFlags, "tls-cert", "tls-key", "log-format", "drain-delay", "shutdown-timeout")
	fs.envFlags = append(fs.envFlags, "addr", "base-url", "redis-url", "config", "webhook-retry-schedule",
		"rate-limit-test", "rate-limit-live", "rate-limit-unauthenticated", "vault-key",
		"rate-limit-tokens", "rate-limit-tokens-per-address",
		"3ds-challenge-ttl", "recovery-interval", "log-level")
	return func() error {
		c.BaseURL = strings.TrimRight(c.BaseURL, "/")
		if c.BaseURL == "" {
			c.BaseURL = c.scheme() + "://" + c.Addr
		}
		c.LogLevel = strings.ToLower(c.LogLevel)
		c.LogFormat = strings.ToLower(c.LogFormat)
		if err := c.Validate(); err != nil {
			return usageErrorf("%v", err)
		}
		return nil
	}
}

// Validate checks every field and names the offending flag. It does not
// check DatabaseURL beyond its presence: opening the store judges it.
func (c *serveConfig) Validate() error {
	if c.DatabaseURL == "" {
		return errors.New("--database-url must not be empty")
	}
	_, port, err := net.SplitHostPort(c.Addr) // an empty host means every interface
	if err != nil {
		return fmt.Errorf("--addr %q must be host:port", c.Addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("--addr %q: port must be a number from 0 to 65535", c.Addr)
	}
	if err := checkHTTPURL(c.BaseURL); err != nil {
		return fmt.Errorf("--base-url: %v", err)
	}
	if u, err := url.Parse(c.BaseURL); err == nil && (u.RawQuery != "" || u.Fragment != "") {
		return errors.New("--base-url must not have a query or fragment")
	}
	if c.RedisURL != "" {
		u, err := url.Parse(c.RedisURL)
		if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			return errors.New("--redis-url must be redis://HOST:PORT[/DB] or rediss://...")
		}
	}
	if len(c.WebhookRetrySchedule) == 0 {
		return errors.New("--webhook-retry-schedule needs at least one entry")
	}
	if len(c.WebhookRetrySchedule) > maxRetrySchedule {
		return fmt.Errorf("--webhook-retry-schedule has more than %d entries", maxRetrySchedule)
	}
	for _, d := range c.WebhookRetrySchedule {
		if d < 0 {
			return errors.New("--webhook-retry-schedule entries must not be negative")
		}
	}
	for _, l := range []struct {
		flag string
		v    int
	}{{"rate-limit-test", c.RateLimitTest}, {"rate-limit-live", c.RateLimitLive}, {"rate-limit-unauthenticated", c.RateLimitUnauthenticated},
		{"rate-limit-tokens", c.RateLimitTokens}, {"rate-limit-tokens-per-address", c.RateLimitTokensPerAddr}} {
		if l.v < 1 {
			return fmt.Errorf("--%s must be at least 1", l.flag)
		}
	}
	for i, k := range c.VaultKeys {
		// The key itself never appears in a message.
		if b, err := base64.StdEncoding.DecodeString(k); err != nil || len(b) != 32 {
			return fmt.Errorf("--vault-key: key %d is not base64 of 32 bytes", i+1)
		}
	}
	if c.ThreeDSChallengeTTL <= 0 {
		return errors.New("--3ds-challenge-ttl must be positive")
	}
	if c.RecoveryInterval <= 0 {
		return errors.New("--recovery-interval must be positive")
	}
	if c.DashboardSessionIdle <= 0 || c.DashboardSessionMax <= 0 {
		return errors.New("--session-idle-timeout (--dashboard-session-idle) and --dashboard-session-max must be positive")
	}
	if c.DashboardSessionIdle > c.DashboardSessionMax {
		return errors.New("--session-idle-timeout (--dashboard-session-idle) must not exceed --dashboard-session-max")
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("--log-level %q must be debug, info, warn or error", c.LogLevel)
	}
	if c.PprofAddr != "" {
		if err := checkLoopbackAddr(c.PprofAddr); err != nil {
			return fmt.Errorf("--pprof: %v", err)
		}
	}
	if c.MaxConnections < 1 {
		return errors.New("--max-connections must be at least 1")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key go together: give both or neither")
	}
	switch c.LogFormat {
	case "", "json", "text":
	default:
		return fmt.Errorf("--log-format %q must be json or text", c.LogFormat)
	}
	if c.DrainDelay < 0 {
		return errors.New("--drain-delay must not be negative")
	}
	if c.ShutdownTimeout <= 0 {
		return errors.New("--shutdown-timeout must be positive")
	}
	if err := checkMetricsAddr(c.MetricsAddr); err != nil {
		return err
	}
	return nil
}

// proxyList is the --trusted-proxies flag.
type proxyList struct{ p *clientaddr.Proxies }

func (l proxyList) String() string {
	if l.p == nil {
		return ""
	}
	return l.p.String()
}

func (l proxyList) Set(v string) error {
	p, err := clientaddr.Parse(v)
	if err != nil {
		return err
	}
	*l.p = p
	return nil
}

// LogValue renders the configuration for a log line with every secret
// masked: vault keys, and passwords in the database and Redis URLs.
func (c serveConfig) LogValue() slog.Value {
	schedule := make([]string, len(c.WebhookRetrySchedule))
	for i, d := range c.WebhookRetrySchedule {
		schedule[i] = shortDuration(d)
	}
	return slog.GroupValue(
		slog.String("databaseUrl", redactURL(c.DatabaseURL)),
		slog.String("addr", c.Addr),
		slog.String("baseUrl", c.BaseURL),
		slog.String("redisUrl", redactURL(c.RedisURL)),
		slog.String("config", c.ConfigFile),
		slog.String("webhookRetrySchedule", strings.Join(schedule, ",")),
		slog.Int("rateLimitTest", c.RateLimitTest),
		slog.Int("rateLimitLive", c.RateLimitLive),
		slog.Int("rateLimitUnauthenticated", c.RateLimitUnauthenticated),
		slog.Int("rateLimitTokens", c.RateLimitTokens),
		slog.Int("rateLimitTokensPerAddress", c.RateLimitTokensPerAddr),
		slog.Int("vaultKeys", len(c.VaultKeys)), // how many, never the keys
		slog.String("threeDSChallengeTTL", shortDuration(c.ThreeDSChallengeTTL)),
		slog.String("recoveryInterval", shortDuration(c.RecoveryInterval)),
		slog.String("logLevel", c.LogLevel),
		slog.String("dashboardSessionIdle", shortDuration(c.DashboardSessionIdle)),
		slog.String("dashboardSessionMax", shortDuration(c.DashboardSessionMax)),
		slog.Bool("requireMFA", c.RequireMFA),
		slog.String("pprof", c.PprofAddr),
		slog.String("metricsAddr", c.MetricsAddr),
		slog.Int("maxConnections", c.MaxConnections),
		slog.String("trustedProxies", c.TrustedProxies.String()),
		slog.Bool("allowPrivateTestWebhooks", c.AllowPrivateTestWebhooks),
		slog.String("tlsCert", c.TLSCert),
		slog.String("tlsKey", c.TLSKey), // the file's name, never its contents
		slog.String("logFormat", c.LogFormat),
		slog.String("drainDelay", shortDuration(c.DrainDelay)),
		slog.String("shutdownTimeout", shortDuration(c.ShutdownTimeout)),
	)
}

// String renders the configuration like LogValue, so that printing it with
// fmt cannot leak a secret either.
func (c serveConfig) String() string { return c.LogValue().String() }

// redactURL masks the password of a URL and the values of query parameters
// that look secret. A URL that does not parse is masked whole.
func redactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "[redacted]"
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			lk := strings.ToLower(k)
			if strings.Contains(lk, "pass") || strings.Contains(lk, "secret") || strings.Contains(lk, "token") || strings.Contains(lk, "key") {
				q.Set(k, "xxxxx")
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// checkHTTPURL accepts an absolute http or https URL with a host.
func checkHTTPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a valid URL", raw)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q must be an absolute http:// or https:// URL", raw)
	}
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("%q has no host", raw)
	}
	if _, err := url.ParseRequestURI(raw); err != nil {
		return fmt.Errorf("%q is not a valid URL", raw)
	}
	return nil
}

// allowPrivateTestWebhooksFlag registers --allow-private-test-webhooks
// (env PAYGATE_ALLOW_PRIVATE_TEST_WEBHOOKS, default true), which serve and
// the webhook commands share: false applies the live-mode address guard to
// test-mode endpoints too (decisions.md section 15).
func allowPrivateTestWebhooksFlag(fs *flagSet, p *bool) {
	fs.BoolVar(p, "allow-private-test-webhooks", true,
		"let test-mode webhook endpoints use loopback, private and link-local addresses; false guards them as live ones (env PAYGATE_ALLOW_PRIVATE_TEST_WEBHOOKS)")
	fs.envFlags = append(fs.envFlags, "allow-private-test-webhooks")
}

// webhookPolicy is where webhooks may go under the flag's value.
func webhookPolicy(allowPrivateTest bool) webhook.Policy {
	return webhook.Policy{GuardTestMode: !allowPrivateTest}
}
