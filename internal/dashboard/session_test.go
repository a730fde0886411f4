package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/signin"
)

func TestSessionRoundTrip(t *testing.T) {
	secret := []byte("project signing secret")
	in := session{Key: strings.Repeat("k", 32), Expires: 1_800_000_000, CSRF: signin.NewToken()}
	value, err := seal(secret, "team-a", in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(value, in.Key) || strings.Contains(value, in.CSRF) {
		t.Fatalf("the cookie shows its secrets: %s", value)
	}
	ns, err := cookieNamespace(value)
	if err != nil || ns != "team-a" {
		t.Fatalf("cookieNamespace = %q, %v", ns, err)
	}
	out, err := open(secret, ns, value)
	if err != nil || out != in {
		t.Fatalf("open = %+v, %v; want %+v", out, err, in)
	}
	if out.expired(time.Unix(1_799_999_999, 0)) || !out.expired(time.Unix(1_800_000_000, 0)) {
		t.Error("expiry is off")
	}

	// What must not open: another project's secret, a cookie moved to another
	// project, any changed byte.
	if _, err := open([]byte("other secret"), ns, value); err == nil {
		t.Error("opened with another project's secret")
	}
	if _, err := open(secret, "team-b", value); err == nil {
		t.Error("opened as another project")
	}
	for i := strings.Index(value, ".") + 1; i < len(value); i += 7 {
		b := []byte(value)
		b[i] ^= 1
		if _, err := open(secret, ns, string(b)); err == nil {
			t.Errorf("opened with byte %d changed", i)
		}
	}
}

// FuzzOpen: any cookie value is refused or opened without panicking, and a
// value that opens was sealed (here: never, as the fuzzer cannot forge).
func FuzzOpen(f *testing.F) {
	secret := []byte("s")
	good, _ := seal(secret, "ns", session{Key: "k", Expires: 1, CSRF: "c"})
	f.Add(good)
	f.Add("bnM.")
	f.Add(".")
	f.Add("")
	f.Fuzz(func(t *testing.T, value string) {
		ns, err := cookieNamespace(value)
		if err != nil {
			return
		}
		s, err := open(secret, ns, value)
		if err == nil && value != good {
			t.Fatalf("a forged cookie opened: %q -> %+v", value, s)
		}
	})
}
