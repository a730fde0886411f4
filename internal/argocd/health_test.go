package argocd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// runHealth runs config/argocd/health.lua on obj the way Argo CD does: the
// object is the global `obj` and the script returns {status, message}.
func runHealth(t *testing.T, obj map[string]any) (status, message string) {
	t.Helper()
	script, err := os.ReadFile(filepath.Join("..", "..", "config", "argocd", "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	L := lua.NewState()
	defer L.Close()
	L.SetGlobal("obj", toLua(L, obj))
	fn, err := L.LoadString(string(script))
	if err != nil {
		t.Fatalf("health.lua does not load: %v", err)
	}
	L.Push(fn)
	if err := L.PCall(0, 1, nil); err != nil {
		t.Fatalf("health.lua failed: %v", err)
	}
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("health.lua returned %v, want a table", L.Get(-1))
	}
	return lua.LVAsString(hs.RawGetString("status")), lua.LVAsString(hs.RawGetString("message"))
}

// toLua converts decoded JSON to Lua values as Argo CD's Lua VM sees them.
func toLua(state *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []any:
		t := state.NewTable()
		for _, e := range v {
			t.Append(toLua(state, e))
		}
		return t
	case map[string]any:
		t := state.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(state, e))
		}
		return t
	}
	panic("unexpected JSON value")
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
