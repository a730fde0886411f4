package cli

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/signin"
)

func TestSignInOptions(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "client-secret")
	if err := os.WriteFile(secret, []byte("from-the-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	issuer := signin.Config{IssuerURL: "https://dex.example.com", ClientID: "vigil"}
	for _, tc := range []struct {
		name               string
		cfg                signin.Config
		scopes, secretFile string
		env                string
		keySignIn          bool
		wantErr            string
		wantSecret         string
		wantScopes         []string
	}{
		{name: "off", keySignIn: true},
		{name: "keys off with nothing else", keySignIn: false, wantErr: "nobody could sign in"},
		{name: "the secret from its file", cfg: issuer, scopes: "email, profile,groups,openid", secretFile: secret, keySignIn: true,
			wantSecret: "from-the-file", wantScopes: []string{"email", "profile", "groups"}},
		{name: "the secret from the environment", cfg: issuer, scopes: "email", env: "from-the-env", keySignIn: false,
			wantSecret: "from-the-env", wantScopes: []string{"email"}},
		{name: "no secret", cfg: issuer, scopes: "email", keySignIn: true, wantErr: "needs the client secret"},
		{name: "a missing file", cfg: issuer, secretFile: secret + ".gone", keySignIn: true, wantErr: "--oidc-client-secret-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("VIGIL_OIDC_CLIENT_SECRET", tc.env)
			opts := manager.Options{SignIn: tc.cfg}
			err := signInOptions(&opts, tc.scopes, tc.secretFile, tc.keySignIn)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if opts.SignIn.ClientSecret != tc.wantSecret || !reflect.DeepEqual(opts.SignIn.Scopes, tc.wantScopes) || opts.NoKeySignIn == tc.keySignIn {
				t.Errorf("secret %q scopes %q no-key %v", opts.SignIn.ClientSecret, opts.SignIn.Scopes, opts.NoKeySignIn)
			}
		})
	}
}
