package runner

import (
	"strings"
	"testing"
)

func TestResolveURL(t *testing.T) {
	tests := []struct {
		name, check, base, want, wantErr string
	}{
		{name: "uuid", check: testCheck, base: "http://vigil:8000", want: "http://vigil:8000/ping/" + testCheck},
		{name: "uuid upper case is canonicalised", check: strings.ToUpper(testCheck), base: "http://vigil:8000", want: "http://vigil:8000/ping/" + testCheck},
		{name: "base with trailing slash", check: testCheck, base: "http://vigil:8000/", want: "http://vigil:8000/ping/" + testCheck},
		{name: "base with path prefix", check: testCheck, base: "https://example.com/vigil", want: "https://example.com/vigil/ping/" + testCheck},
		{name: "ping key and slug", check: "pk-123/nightly-backup", base: "http://vigil", want: "http://vigil/ping/pk-123/nightly-backup"},
		{name: "full URL as is", check: "https://hc-ping.com/" + testCheck, base: "http://ignored", want: "https://hc-ping.com/" + testCheck},
		{name: "full URL keeps query", check: "http://vigil/ping/pk/slug?create=1", want: "http://vigil/ping/pk/slug?create=1"},
		{name: "no base", check: testCheck, wantErr: "VIGIL_URL"},
		{name: "empty", check: " ", base: "http://vigil", wantErr: "no check"},
		{name: "too many segments", check: "pk/slug/start", base: "http://vigil", wantErr: "neither"},
		{name: "not a uuid", check: "nightly-backup", base: "http://vigil", wantErr: "neither"},
		{name: "empty slug", check: "pk/", base: "http://vigil", wantErr: "neither"},
		{name: "bad scheme", check: "ftp://vigil/ping/x", wantErr: "only http and https"},
		{name: "bad base", check: testCheck, base: "vigil:8000", wantErr: "only http and https"},
		{name: "no host", check: "http:///ping/x", wantErr: "no host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveURL(tt.check, tt.base)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ResolveURL(%q, %q) = %q, %v; want error containing %q", tt.check, tt.base, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ResolveURL(%q, %q) = %q, %v; want %q", tt.check, tt.base, got, err, tt.want)
			}
		})
	}
}

func TestPingURL(t *testing.T) {
	const rid = "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9"
	base := "http://vigil/ping/" + testCheck
	exit3, _ := ExitStatus(3)
	exit0, _ := ExitStatus(0)
	tests := []struct {
		name, url string
		kind      Kind
		rid, want string
		wantErr   bool
	}{
		{name: "success", url: base, want: base},
		{name: "start with rid", url: base, kind: Start, rid: rid, want: base + "/start?rid=" + rid},
		{name: "rid canonicalised", url: base, kind: Fail, rid: strings.ToUpper(rid), want: base + "/fail?rid=" + rid},
		{name: "log", url: base, kind: Log, want: base + "/log"},
		{name: "exit 0", url: base, kind: exit0, want: base + "/0"},
		{name: "exit 3", url: base, kind: exit3, want: base + "/3"},
		{name: "trailing slash", url: base + "/", kind: Start, want: base + "/start"},
		{name: "keeps create=1", url: "http://vigil/ping/pk/slug?create=1", kind: Start, rid: rid, want: "http://vigil/ping/pk/slug/start?create=1&rid=" + rid},
		{name: "replaces rid", url: base + "?rid=" + strings.Repeat("0", 8) + "-0000-0000-0000-000000000000", rid: rid, want: base + "?rid=" + rid},
		{name: "bad rid", url: base, rid: "run-1", wantErr: true},
		{name: "bad url", url: "vigil/ping", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PingURL(tt.url, tt.kind, tt.rid)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("PingURL = %q, want an error", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("PingURL(%q, %q, %q) = %q, %v; want %q", tt.url, tt.kind, tt.rid, got, err, tt.want)
			}
		})
	}
}

func TestExitStatus(t *testing.T) {
	for _, tt := range []struct {
		code int
		want Kind
		ok   bool
	}{{0, "0", true}, {1, "1", true}, {255, "255", true}, {256, "", false}, {-1, "", false}} {
		got, err := ExitStatus(tt.code)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ExitStatus(%d) = %q, %v", tt.code, got, err)
		}
	}
}
