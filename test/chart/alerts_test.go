package chart_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/vigil-operator/vigil/internal/testenv"
)

// TestDeliveriesFailingAlert evaluates the chart's VigilDeliveriesFailing
// with Prometheus's own rule engine (promtool test rules, beside the
// prometheus binary the tests use): it fires for a kind whose every attempt
// failed for the window, after its `for`, and never for a kind that also
// delivers.
func TestDeliveriesFailingAlert(t *testing.T) {
	bin, err := testenv.PrometheusBin()
	if err != nil {
		t.Fatal(err)
	}
	promtool := filepath.Join(filepath.Dir(bin), "promtool")
	pr := helmTemplate(t, "--set", "prometheusRule.enabled=true").must(t, "PrometheusRule", "vigil")
	groups, _, _ := unstructured.NestedSlice(pr.Object, "spec", "groups")
	rules, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	var failing map[string]any
	for _, g := range groups {
		rs, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rs {
			if r := r.(map[string]any); r["alert"] == "VigilDeliveriesFailing" {
				failing = r
			}
		}
	}
	if failing == nil {
		t.Fatal("no VigilDeliveriesFailing")
	}
	// Its annotations as Prometheus renders them for the telegram kind.
	annotations := map[string]string{}
	raw, _, _ := unstructured.NestedStringMap(failing, "annotations")
	for k, v := range raw {
		annotations[k] = strings.ReplaceAll(v, "{{ $labels.kind }}", "telegram")
	}

	series := func(kind, outcome, values string) map[string]string {
		return map[string]string{
			"series": `vigil_delivery_attempts_total{job="vigil-metrics", namespace="` + namespace + `", kind="` + kind + `", outcome="` + outcome + `"}`,
			"values": values,
		}
	}
	tests := map[string]any{
		"rule_files":          []string{"rules.yaml"},
		"evaluation_interval": "1m",
		"tests": []any{map[string]any{
			"interval": "1m",
			"input_series": []any{
				// Every Telegram attempt fails, one a minute; webhooks
				// fail and deliver; Slack never tries.
				series("telegram", "error", "0+1x40"),
				series("telegram", "delivered", "0x40"),
				series("webhook", "error", "0+1x40"),
				series("webhook", "delivered", "0+1x40"),
				series("slack", "error", "0x40"),
				series("slack", "delivered", "0x40"),
			},
			"alert_rule_test": []any{
				// Failing, but not yet for the rule's `for` (5m).
				map[string]any{"eval_time": "3m", "alertname": "VigilDeliveriesFailing", "exp_alerts": []any{}},
				map[string]any{"eval_time": "20m", "alertname": "VigilDeliveriesFailing", "exp_alerts": []any{map[string]any{
					"exp_labels":      map[string]string{"kind": "telegram", "severity": "warning"},
					"exp_annotations": annotations,
				}}},
			},
		}},
	}
	testsYAML, err := yaml.Marshal(tests)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, content := range map[string][]byte{"rules.yaml": rules, "tests.yaml": testsYAML} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), promtool, "test", "rules", "tests.yaml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s\nrules:\n%s", err, out, rules)
	}
}
