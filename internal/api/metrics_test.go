package api

import (
	"strings"
	"testing"
)

const testCode = "9575e397-9b08-5503-9bc6-7ffb26607e0b"

func TestMetricsPath(t *testing.T) {
	key := "hcr_" + strings.Repeat("x", 28)
	tests := []struct {
		path      string
		code, key string
		ok        bool
	}{
		{"/projects/" + testCode + "/metrics/" + key, testCode, key, true},
		{"/projects/" + testCode + "/checks/metrics/" + key, testCode, key, true},
		{"/projects/" + testCode + "/metrics/", testCode, "", true},
		// Any slug is a key here; its length is the handler's 400.
		{"/projects/" + testCode + "/metrics/short", testCode, "short", true},
		{"/projects/" + testCode + "/metrics/a-b_C9", testCode, "a-b_C9", true},
		// What the reference's URL patterns do not match.
		{"/projects/" + testCode + "/metrics", "", "", false},
		{"/projects/" + testCode + "/metrics/" + key + "/", "", "", false},
		{"/projects/" + testCode + "/checks/metrics/", "", "", false},
		{"/projects/" + strings.ToUpper(testCode) + "/metrics/" + key, "", "", false},
		{"/projects/not-a-uuid/metrics/" + key, "", "", false},
		{"/projects/" + testCode, "", "", false},
		{"/projects/" + testCode + "/", "", "", false},
		{"/projects/" + testCode + "/metrics/a.b", "", "", false},
		{"/projects/" + testCode + "/metrics/a%2Fb", "", "", false},
		{"/projects/" + testCode + "/metrics/a/b", "", "", false},
		{"/projects/" + testCode + "/badges/" + key, "", "", false},
		{"/projects/", "", "", false},
		{"/api/v3/projects/" + testCode + "/metrics/", "", "", false},
	}
	for _, tt := range tests {
		code, key, ok := metricsPath(tt.path)
		if code != tt.code || key != tt.key || ok != tt.ok {
			t.Errorf("metricsPath(%q) = %q, %q, %v; want %q, %q, %v", tt.path, code, key, ok, tt.code, tt.key, tt.ok)
		}
	}
}

func FuzzMetricsPath(f *testing.F) {
	f.Add("/projects/" + testCode + "/metrics/hcr_xxxxxxxxxxxxxxxxxxxxxxxxxxxx")
	f.Add("/projects/" + testCode + "/checks/metrics/k")
	f.Add("/projects/" + testCode + "/metrics/")
	f.Fuzz(func(t *testing.T, path string) {
		code, key, ok := metricsPath(path)
		if !ok {
			if code != "" || key != "" {
				t.Fatalf("metricsPath(%q) refused the path but returned %q, %q", path, code, key)
			}
			return
		}
		if !uuidRE.MatchString(code) {
			t.Fatalf("metricsPath(%q): code %q is not a lowercase UUID", path, code)
		}
		if key != "" && !slugRE.MatchString(key) {
			t.Fatalf("metricsPath(%q): key %q is not a slug", path, key)
		}
		// The path is exactly one of the three forms.
		if path != "/projects/"+code+"/metrics/"+key && path != "/projects/"+code+"/checks/metrics/"+key {
			t.Fatalf("metricsPath(%q) = %q, %q, which is not the path", path, code, key)
		}
	})
}

func TestEscapeLabel(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{`say "hi"`, `say \"hi\"`},
		{`C:\dir`, `C:\\dir`},
		{"line 1\nline 2", `line 1\nline 2`},
		{`\"` + "\n", `\\\"\n`},
		{"tab\tand é", "tab\tand é"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := escapeLabel(tt.in); got != tt.want {
			t.Errorf("escapeLabel(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// unescapeLabel reads a label value as Prometheus's text parser does.
func unescapeLabel(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\n', '"':
			return "", false // must have been escaped
		case '\\':
			if i++; i == len(s) {
				return "", false
			}
			switch s[i] {
			case '\\':
				b.WriteByte('\\')
			case '"':
				b.WriteByte('"')
			case 'n':
				b.WriteByte('\n')
			default:
				return "", false
			}
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), true
}

func FuzzEscapeLabel(f *testing.F) {
	f.Add(`a "quoted" \ name` + "\nwith a newline")
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := unescapeLabel(escapeLabel(s))
		if !ok || got != s {
			t.Fatalf("escapeLabel(%q) = %q reads back as %q (%v)", s, escapeLabel(s), got, ok)
		}
	})
}
