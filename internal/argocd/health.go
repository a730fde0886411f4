package argocd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	lua "github.com/yuin/gopher-lua"
)

// HealthScript is config/argocd/health.lua, relative to the repository root.
const HealthScript = "config/argocd/health.lua"

// Health runs the health script at path on obj (a Check as decoded JSON) the
// way Argo CD does: the object is the global `obj` and the script returns
// {status, message}.
func Health(path string, obj map[string]any) (status, message string, err error) {
	script, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return "", "", err
	}
	L := lua.NewState()
	defer L.Close()
	L.SetGlobal("obj", toLua(L, obj))
	fn, err := L.LoadString(string(script))
	if err != nil {
		return "", "", fmt.Errorf("health.lua does not load: %w", err)
	}
	L.Push(fn)
	if err := L.PCall(0, 1, nil); err != nil {
		return "", "", fmt.Errorf("health.lua failed: %w", err)
	}
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return "", "", errors.New("health.lua did not return a table")
	}
	return lua.LVAsString(hs.RawGetString("status")), lua.LVAsString(hs.RawGetString("message")), nil
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
