package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"
)

// Prometheus is a throw-away Prometheus server for tests: a temporary
// configuration and storage directory, a server on a free loopback port,
// everything removed by Stop. The binary comes from Debian's prometheus
// package (hack/ensure-packages.sh prometheus installs it; `make test` runs that
// first).
type Prometheus struct {
	// URL is the server's, such as http://127.0.0.1:34567.
	URL string
	dir string
	cmd *exec.Cmd
	out *Output
	// exited is closed when the process has exited.
	exited chan struct{}
}

// ScrapeJob is one scrape job of the server's configuration.
type ScrapeJob struct {
	Name string
	// Target is host:port.
	Target      string
	MetricsPath string
	// BearerToken, when set, is sent as Authorization: Bearer.
	BearerToken string
}

// PrometheusBin finds the prometheus binary: $VIGIL_PROMETHEUS, or
// prometheus on the PATH.
func PrometheusBin() (string, error) {
	if p := os.Getenv("VIGIL_PROMETHEUS"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p, nil
	}
	return "", errors.New("testenv: no prometheus binary; run hack/ensure-packages.sh prometheus " +
		"(as root it installs Debian's prometheus package; `make test` runs it) or set VIGIL_PROMETHEUS")
}

// StartPrometheus starts a server that scrapes jobs every second, and
// returns once it is ready.
func StartPrometheus(ctx context.Context, jobs ...ScrapeJob) (*Prometheus, error) {
	bin, err := PrometheusBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "vigil-prometheus-")
	if err != nil {
		return nil, err
	}
	p := &Prometheus{dir: dir, out: &Output{}}
	if err := p.start(ctx, bin, jobs); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

func (p *Prometheus) start(ctx context.Context, bin string, jobs []ScrapeJob) error {
	scrapes := make([]map[string]any, 0, len(jobs))
	for _, j := range jobs {
		s := map[string]any{
			"job_name":       j.Name,
			"metrics_path":   j.MetricsPath,
			"static_configs": []map[string]any{{"targets": []string{j.Target}}},
		}
		if j.BearerToken != "" {
			s["authorization"] = map[string]any{"credentials": j.BearerToken}
		}
		scrapes = append(scrapes, s)
	}
	cfg, err := yaml.Marshal(map[string]any{
		"global":         map[string]any{"scrape_interval": "1s", "scrape_timeout": "1s"},
		"scrape_configs": scrapes,
	})
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(p.dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		return err
	}
	addr, err := FreeAddr(ctx)
	if err != nil {
		return err
	}
	p.URL = "http://" + addr
	p.cmd = exec.CommandContext(context.WithoutCancel(ctx), bin, //nolint:gosec // the test's own binary and flags
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(p.dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn")
	p.cmd.Dir = p.dir
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	// A server outlives no test process, even one killed by a timeout.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("testenv: starting prometheus: %w", err)
	}
	p.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { _ = cmd.Wait(); close(exited) }(p.cmd, p.exited)
	deadline := time.After(30 * time.Second)
	for {
		if ready(ctx, p.URL+"/-/ready") {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("testenv: prometheus exited: %s", p.out)
		case <-deadline:
			return fmt.Errorf("testenv: prometheus was not ready within 30 s: %s", p.out)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func ready(ctx context.Context, u string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Sample is one series of an instant query's answer.
type Sample struct {
	Labels map[string]string
	Value  string
}

// Query runs an instant PromQL query through the server's HTTP API.
func (p *Prometheus) Query(ctx context.Context, query string) ([]Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/query?query="+url.QueryEscape(query), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return nil, fmt.Errorf("testenv: prometheus query %q: %s: %w", query, resp.Status, err)
	}
	if answer.Status != "success" || answer.Data.ResultType != "vector" {
		return nil, fmt.Errorf("testenv: prometheus query %q: %s %s %s", query, resp.Status, answer.Error, answer.Data.ResultType)
	}
	out := make([]Sample, 0, len(answer.Data.Result))
	for _, r := range answer.Data.Result {
		v, _ := r.Value[1].(string)
		out = append(out, Sample{Labels: r.Metric, Value: v})
	}
	return out, nil
}

// Targets reports each scrape job's last scrape: its health ("up",
// "down", "unknown") and error, for a test's failure message.
func (p *Prometheus) Targets(ctx context.Context) (map[string]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/targets", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var answer struct {
		Data struct {
			ActiveTargets []struct {
				ScrapePool string `json:"scrapePool"`
				Health     string `json:"health"`
				LastError  string `json:"lastError"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, t := range answer.Data.ActiveTargets {
		out[t.ScrapePool] = t.Health + " " + t.LastError
	}
	return out, nil
}

// Stop stops the server and deletes its configuration and data.
func (p *Prometheus) Stop() error {
	if p.exited != nil {
		_ = p.cmd.Process.Kill()
		<-p.exited
		p.exited = nil
	}
	return os.RemoveAll(p.dir)
}
