package argocd

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// runHealth runs config/argocd/health.lua on obj.
func runHealth(t *testing.T, obj map[string]any) (status, message string) {
	t.Helper()
	status, message, err := Health(filepath.Join("..", "..", HealthScript), obj)
	if err != nil {
		t.Fatal(err)
	}
	return status, message
}

func check(t *testing.T, manifest string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(manifest), &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

const readyTrue = `{"type":"Ready","status":"True","reason":"Monitoring","message":"monitoring"}`

func TestHealth(t *testing.T) {
	for _, tc := range []struct {
		name, obj, want string
	}{
		{"never reconciled", `{"metadata":{"generation":1}}`, "Progressing"},
		{"older generation observed", `{"metadata":{"generation":3},"status":{"observedGeneration":2,"state":"up","conditions":[` + readyTrue + `]}}`, "Progressing"},
		{"new", `{"metadata":{"generation":1},"status":{"observedGeneration":1,"state":"new","conditions":[` + readyTrue + `]}}`, "Healthy"},
		{"up", `{"metadata":{"generation":1},"status":{"observedGeneration":1,"state":"up","conditions":[` + readyTrue + `]}}`, "Healthy"},
		{"grace", `{"metadata":{"generation":2},"status":{"observedGeneration":2,"state":"grace","conditions":[` + readyTrue + `]}}`, "Healthy"},
		{"down", `{"metadata":{"generation":1},"status":{"observedGeneration":1,"state":"down","conditions":[` + readyTrue + `,{"type":"Up","status":"False","reason":"CheckDown","message":"no ping since 03:30"}]}}`, "Degraded"},
		{"paused", `{"metadata":{"generation":1},"status":{"observedGeneration":1,"state":"paused","conditions":[` + readyTrue + `]}}`, "Suspended"},
		{"bad spec", `{"metadata":{"generation":1},"status":{"observedGeneration":1,"conditions":[{"type":"Ready","status":"False","reason":"InvalidSchedule","message":"invalid cron expression: minute field: 61 is out of range 0-59"}]}}`, "Degraded"},
		{"observed but no Ready yet", `{"metadata":{"generation":1},"status":{"observedGeneration":1,"state":"up"}}`, "Progressing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, msg := runHealth(t, check(t, tc.obj))
			if got != tc.want {
				t.Errorf("health = %s (%q), want %s", got, msg, tc.want)
			}
			if msg == "" {
				t.Error("health must explain itself with a message")
			}
		})
	}
}

func TestHealthMessagesCarryTheReason(t *testing.T) {
	_, msg := runHealth(t, check(t, `{"metadata":{"generation":1},"status":{"observedGeneration":1,"conditions":[{"type":"Ready","status":"False","reason":"InvalidTimeZone","message":"invalid timezone: \"Mars/Base\""}]}}`))
	if msg != `invalid timezone: "Mars/Base"` {
		t.Errorf("message = %q, want the Ready condition's message", msg)
	}
	_, msg = runHealth(t, check(t, `{"metadata":{"generation":1},"status":{"observedGeneration":1,"state":"down","conditions":[`+readyTrue+`,{"type":"Up","status":"False","reason":"CheckDown","message":"missed its deadline at 03:45"}]}}`))
	if msg != "missed its deadline at 03:45" {
		t.Errorf("message = %q, want the Up condition's message", msg)
	}
}
