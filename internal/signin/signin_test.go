package signin

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
)

func TestLocalPath(t *testing.T) {
	for _, tc := range []struct{ next, want string }{
		{"/", "/"},
		{"/checks/5d5f3e70-1c6d-4b6c-9c3a-1f0d2e3c4b5a", "/checks/5d5f3e70-1c6d-4b6c-9c3a-1f0d2e3c4b5a"},
		{"/?project=team-a&state=down", "/?project=team-a&state=down"},
		{"", "/"},
		{"checks/x", "/"},
		{"//evil.example/", "/"},
		{"/\\evil.example", "/"},
		{"https://evil.example/", "/"},
		{"/ok\r\nSet-Cookie: x=y", "/"},
		{"/" + strings.Repeat("a", 2048), "/"},
	} {
		if got := localPath(tc.next); got != tc.want {
			t.Errorf("localPath(%q) = %q, want %q", tc.next, got, tc.want)
		}
	}
}

// Whatever the page to return to says, the browser is sent to this site.
func FuzzLocalPath(f *testing.F) {
	for _, s := range []string{"/", "//x", "/\\x", "https://x", "/a?b=c#d", "\t//x", "/%2F%2Fx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) {
		got := localPath(next)
		u, err := url.Parse(got)
		if err != nil || u.Scheme != "" || u.Host != "" || !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") ||
			strings.ContainsAny(got, "\\\r\n") {
			t.Fatalf("localPath(%q) = %q leaves this site", next, got)
		}
	})
}

func TestIdentity(t *testing.T) {
	s := &Service{cfg: Config{UsernameClaim: "email", GroupsClaim: "groups", UsernamePrefix: "oidc:", GroupsPrefix: "oidc:"}}
	for _, tc := range []struct {
		name    string
		claims  map[string]any
		user    string
		groups  []string
		refused string
	}{
		{"email and groups", map[string]any{"email": "a@example.com", "email_verified": true, "groups": []any{"ops", "dev"}},
			"oidc:a@example.com", []string{"oidc:ops", "oidc:dev"}, ""},
		{"one group as a string", map[string]any{"email": "a@example.com", "groups": "ops"}, "oidc:a@example.com", []string{"oidc:ops"}, ""},
		{"no groups", map[string]any{"email": "a@example.com"}, "oidc:a@example.com", []string{}, ""},
		{"groups of other types ignored", map[string]any{"email": "a@example.com", "groups": []any{"ops", 7, nil}}, "oidc:a@example.com", []string{"oidc:ops"}, ""},
		{"unverified email", map[string]any{"email": "a@example.com", "email_verified": false}, "", nil, "not verified"},
		{"email_verified as a string", map[string]any{"email": "a@example.com", "email_verified": "true"}, "", nil, "not verified"},
		{"no username claim", map[string]any{"sub": "x"}, "", nil, `no "email" claim`},
		{"too many groups", map[string]any{"email": "a@example.com", "groups": manyGroups(MaxGroups + 1)}, "", nil, "groups, more than"},
		{"a group too long", map[string]any{"email": "a@example.com", "groups": []any{strings.Repeat("g", MaxNameBytes)}}, "", nil, "longer"},
		{"a name too long", map[string]any{"email": strings.Repeat("n", MaxNameBytes)}, "", nil, "longer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			who, refused := s.identity(tc.claims)
			if tc.refused != "" {
				if !strings.Contains(refused, tc.refused) {
					t.Fatalf("refused %q, want it to say %q", refused, tc.refused)
				}
				return
			}
			if refused != "" || who.Username != tc.user || !reflect.DeepEqual(who.Groups, tc.groups) {
				t.Errorf("identity = %q %q (refused %q), want %q %q", who.Username, who.Groups, refused, tc.user, tc.groups)
			}
		})
	}
}

func manyGroups(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = "g"
	}
	return out
}

// The login cookie opens only as sealed: tampered, cut or sealed with
// another client secret's key, it is refused.
func TestLoginCookie(t *testing.T) {
	a, err := New(Config{IssuerURL: "https://idp.example", ClientID: "c", ClientSecret: "one", RedirectURL: "https://v.example/auth/callback"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{IssuerURL: "https://idp.example", ClientID: "c", ClientSecret: "two", RedirectURL: "https://v.example/auth/callback"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := login{State: "s", Nonce: "n", Verifier: "v", Next: "/checks/x", Expires: 42}
	sealed, err := a.seal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out login
	if err := a.open(sealed, &out); err != nil || out != in {
		t.Fatalf("open = %+v, %v", out, err)
	}
	tampered := []byte(sealed)
	tampered[len(tampered)/2] ^= 1
	for name, v := range map[string]string{"tampered": string(tampered), "cut": sealed[:20], "long": strings.Repeat("A", maxLoginCookie+1)} {
		if err := a.open(v, &out); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
	if err := b.open(sealed, &out); err == nil {
		t.Error("another client secret's key opened it")
	}
}

func TestNewRefusesIncompleteSettings(t *testing.T) {
	ok := Config{IssuerURL: "https://idp.example", ClientID: "c", ClientSecret: "s", RedirectURL: "https://v.example/auth/callback"}
	for name, change := range map[string]func(*Config){
		"no issuer":       func(c *Config) { c.IssuerURL = "" },
		"no client":       func(c *Config) { c.ClientID = "" },
		"no secret":       func(c *Config) { c.ClientSecret = "" },
		"relative return": func(c *Config) { c.RedirectURL = "/auth/callback" },
	} {
		c := ok
		change(&c)
		if _, err := New(c, nil, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := New(ok, nil, nil); err != nil {
		t.Errorf("complete settings: %v", err)
	}
}

// A provider that cannot be reached is asked again only after
// discoveryRetry: anyone may start a sign-in, and each must not reach out
// to it.
func TestDiscoveryFailureIsRemembered(t *testing.T) {
	var asked atomic.Int32
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer idp.Close()
	s, err := New(Config{IssuerURL: idp.URL, ClientID: "c", ClientSecret: "s", RedirectURL: "https://v.example/auth/callback"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		w := httptest.NewRecorder()
		err := s.Begin(w, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/auth/signin", nil), "/")
		var p *Problem
		if !errors.As(err, &p) || p.Status != http.StatusServiceUnavailable {
			t.Fatalf("Begin = %v, want a 503 problem", err)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the provider was asked %d times, want once", n)
	}
}

func TestSameToken(t *testing.T) {
	if SameToken("", "") || SameToken("a", "") || SameToken("a", "b") || !SameToken("abc", "abc") {
		t.Error("SameToken is wrong")
	}
}
