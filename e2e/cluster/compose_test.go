package cluster

import (
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/paygate/paygate/internal/testenv"
)

// composeFile is the part of deploy/compose.yaml the tests read.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Secrets  map[string]struct {
		File string `yaml:"file"`
	} `yaml:"secrets"`
	Networks map[string]struct {
		IPAM struct {
			Config []struct {
				Subnet string `yaml:"subnet"`
			} `yaml:"config"`
		} `yaml:"ipam"`
	} `yaml:"networks"`
}

type composeService struct {
	Image           string            `yaml:"image"`
	Environment     map[string]string `yaml:"environment"`
	Secrets         []string          `yaml:"secrets"`
	Volumes         []string          `yaml:"volumes"`
	Ports           []string          `yaml:"ports"`
	StopGracePeriod string            `yaml:"stop_grace_period"`
	Networks        yaml.Node         `yaml:"networks"`
}

// prometheusFile is the part of deploy/prometheus.yml the tests read.
type prometheusFile struct {
	ScrapeConfigs []struct {
		StaticConfigs []struct {
			Targets []string `yaml:"targets"`
		} `yaml:"static_configs"`
	} `yaml:"scrape_configs"`
}

func readYAML(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("deploy/%s: %v", name, err)
	}
}

// serveFlagNames lists the flags `paygate serve --help` shows.
func serveFlagNames(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command(binary, "serve", "--help").Output()
	if err != nil {
		t.Fatalf("paygate serve --help: %v", err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^  --([a-z0-9-]+)`).FindAllStringSubmatch(string(out), -1) {
		names = append(names, m[1])
	}
	if len(names) < 10 {
		t.Fatalf("paygate serve --help lists %d flags:\n%s", len(names), out)
	}
	return names
}

// TestComposeAgrees checks that deploy/compose.yaml, nginx.conf and
// prometheus.yml describe one system: nginx's upstream servers are the
// paygate services on the port they listen on, Prometheus scrapes each of
// them on its metrics port, the nodes trust nginx's fixed address and no
// other, secrets reach the nodes as files (never values in the
// environment) from a directory kept out of git and of the image's build,
// and every PAYGATE_ variable names a flag of serve.
func TestComposeAgrees(t *testing.T) {
	t.Parallel()
	var c composeFile
	readYAML(t, "compose.yaml", &c)
	var prom prometheusFile
	readYAML(t, "prometheus.yml", &prom)
	conf := deployNginxConf(t)

	var upstream []string
	for _, m := range serverLine.FindAllStringSubmatch(conf, -1) {
		upstream = append(upstream, m[2])
	}
	var targets []string
	for _, sc := range prom.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			targets = append(targets, st.Targets...)
		}
	}
	var nodes []string
	for name := range c.Services {
		if strings.HasPrefix(name, "paygate-") {
			nodes = append(nodes, name)
		}
	}
	slices.Sort(nodes)
	if len(nodes) != 3 {
		t.Fatalf("compose.yaml has paygate services %v, want three", nodes)
	}

	nginxSvc, ok := c.Services["nginx"]
	if !ok {
		t.Fatal("compose.yaml has no nginx service")
	}
	nginxIP := ""
	var ipNode struct {
		Paygate struct {
			IPv4 string `yaml:"ipv4_address"`
		} `yaml:"paygate"`
	}
	if err := nginxSvc.Networks.Decode(&ipNode); err == nil {
		nginxIP = ipNode.Paygate.IPv4
	}
	addr, err := netip.ParseAddr(nginxIP)
	if err != nil {
		t.Fatalf("nginx has no fixed address on the paygate network (%q): the nodes could not trust it alone", nginxIP)
	}
	var subnet netip.Prefix
	if cfgs := c.Networks["paygate"].IPAM.Config; len(cfgs) == 1 {
		subnet, _ = netip.ParsePrefix(cfgs[0].Subnet)
	}
	if !subnet.IsValid() || !subnet.Contains(addr) {
		t.Errorf("nginx's address %s is not in the paygate network's subnet %q", addr, subnet)
	}

	flags := serveFlagNames(t)
	fixed := map[string]string{nginxIP: "nginx"}
	var wantUpstream, wantTargets []string
	for _, name := range nodes {
		svc := c.Services[name]
		env := svc.Environment
		// nginx resolves the nodes' names once: each must keep its
		// address when it is recreated.
		var ip struct {
			Paygate struct {
				IPv4 string `yaml:"ipv4_address"`
			} `yaml:"paygate"`
		}
		_ = svc.Networks.Decode(&ip)
		if a, err := netip.ParseAddr(ip.Paygate.IPv4); err != nil || fixed[a.String()] != "" || !subnet.Contains(a) {
			t.Errorf("%s: address %q on the paygate network, want a fixed one of its own in %s", name, ip.Paygate.IPv4, subnet)
		} else {
			fixed[a.String()] = name
		}
		_, port, err := net.SplitHostPort(env["PAYGATE_ADDR"])
		if err != nil {
			t.Errorf("%s: PAYGATE_ADDR %q", name, env["PAYGATE_ADDR"])
		}
		wantUpstream = append(wantUpstream, name+":"+port)
		_, mport, err := net.SplitHostPort(env["PAYGATE_METRICS_ADDR"])
		if err != nil {
			t.Errorf("%s: PAYGATE_METRICS_ADDR %q", name, env["PAYGATE_METRICS_ADDR"])
		}
		wantTargets = append(wantTargets, name+":"+mport)
		if env["PAYGATE_TRUSTED_PROXIES"] != nginxIP {
			t.Errorf("%s trusts %q, want nginx's address %s alone", name, env["PAYGATE_TRUSTED_PROXIES"], nginxIP)
		}
		if env["PAYGATE_REDIS_URL"] == "" {
			t.Errorf("%s has no PAYGATE_REDIS_URL: rate limits would not be shared", name)
		}
		for _, secret := range []string{"PAYGATE_VAULT_KEY", "PAYGATE_DATABASE_URL"} {
			if _, ok := env[secret]; ok {
				t.Errorf("%s sets %s in the environment; use %s_FILE and a secret", name, secret, secret)
			}
			file := env[secret+"_FILE"]
			sname, ok := strings.CutPrefix(file, "/run/secrets/")
			if !ok || !slices.Contains(svc.Secrets, sname) {
				t.Errorf("%s: %s_FILE=%q is not one of its secrets %v", name, secret, file, svc.Secrets)
				continue
			}
			if f := c.Secrets[sname].File; !strings.HasPrefix(f, "./secrets/") {
				t.Errorf("secret %s comes from %q, want a file under deploy/secrets/", sname, f)
			}
		}
		for key := range env {
			flag, ok := strings.CutPrefix(key, "PAYGATE_")
			if !ok {
				continue
			}
			flag = strings.ToLower(strings.ReplaceAll(strings.TrimSuffix(flag, "_FILE"), "_", "-"))
			switch {
			case slices.Contains(flags, flag):
			default:
				t.Errorf("%s: %s names no flag of paygate serve", name, key)
			}
		}
		// Compose must wait out the drain delay and the shutdown timeout
		// before it SIGKILLs a node.
		grace, err1 := time.ParseDuration(svc.StopGracePeriod)
		drain, err2 := time.ParseDuration(env["PAYGATE_DRAIN_DELAY"])
		stop, err3 := time.ParseDuration(env["PAYGATE_SHUTDOWN_TIMEOUT"])
		if err1 != nil || err2 != nil || err3 != nil || grace <= drain+stop {
			t.Errorf("%s: stop_grace_period %q must exceed PAYGATE_DRAIN_DELAY %q + PAYGATE_SHUTDOWN_TIMEOUT %q",
				name, svc.StopGracePeriod, env["PAYGATE_DRAIN_DELAY"], env["PAYGATE_SHUTDOWN_TIMEOUT"])
		}
	}
	if !slices.Equal(upstream, wantUpstream) {
		t.Errorf("nginx.conf's upstream servers are %v, want the paygate services %v", upstream, wantUpstream)
	}
	if !slices.Equal(targets, wantTargets) {
		t.Errorf("prometheus.yml scrapes %v, want the paygate services' metrics listeners %v", targets, wantTargets)
	}

	// nginx gets the committed configuration and the certificate directory
	// its ssl_certificate names, and publishes its listener.
	certDir := filepath.Dir(regexp.MustCompile(`(?m)^\s*ssl_certificate\s+(\S+);`).FindStringSubmatch(conf)[1])
	for _, want := range []string{"./nginx.conf:/etc/nginx/nginx.conf:ro", "./certs:" + certDir + ":ro"} {
		if !slices.Contains(nginxSvc.Volumes, want) {
			t.Errorf("nginx's volumes %v lack %s", nginxSvc.Volumes, want)
		}
	}
	if !slices.Contains(nginxSvc.Ports, "8443:8443") {
		t.Errorf("nginx publishes %v, want 8443:8443 (its listen port)", nginxSvc.Ports)
	}
	if !slices.Contains(c.Services["prometheus"].Volumes, "./prometheus.yml:/etc/prometheus/prometheus.yml:ro") {
		t.Errorf("prometheus does not mount deploy/prometheus.yml: %v", c.Services["prometheus"].Volumes)
	}

	// The secrets' and certificates' directories stay out of git and out
	// of the image's build context.
	for _, ignore := range []struct{ file, want string }{
		{".gitignore", "/deploy/secrets/"}, {".gitignore", "/deploy/certs/"},
		{".dockerignore", "deploy/secrets/"}, {".dockerignore", "deploy/certs/"},
	} {
		b, err := os.ReadFile(filepath.Join(repoRoot, ignore.file))
		if err != nil || !slices.Contains(strings.Split(string(b), "\n"), ignore.want) {
			t.Errorf("%s does not list %s", ignore.file, ignore.want)
		}
	}
}

// TestPrometheusConfig checks deploy/prometheus.yml with Prometheus's own
// checker.
func TestPrometheusConfig(t *testing.T) {
	t.Parallel()
	promtool := testenv.Program(t, "/usr/bin/promtool", "prometheus")
	out, err := exec.Command(promtool, "check", "config", filepath.Join(repoRoot, "deploy", "prometheus.yml")).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check config deploy/prometheus.yml: %v\n%s", err, out)
	}
}
