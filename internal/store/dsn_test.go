package store_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-operator/vigil/internal/store"
)

// TestRedact shows every form of DSN as messages may show it: passwords
// masked where the driver would find them, and nothing shown of a DSN that
// cannot be read exactly.
func TestRedact(t *testing.T) {
	for _, tc := range []struct {
		name, dsn, want string
		secrets         []string // none of which may be shown
	}{
		{"URL", "postgres://vigil:s3cret@db:5432/vigil?sslmode=verify-full",
			"postgres://vigil:xxxxx@db:5432/vigil?sslmode=verify-full", []string{"s3cret"}},
		{"postgresql URL", "postgresql://vigil:s3cret@db/vigil", "postgresql://vigil:xxxxx@db/vigil", []string{"s3cret"}},
		{"URL without a password", "postgres://vigil@db/vigil", "postgres://vigil@db/vigil", nil},
		{"URL with an empty password", "postgres://vigil:@db/vigil", "postgres://vigil:xxxxx@db/vigil", nil},
		{"URL password parameter", "postgres://db/vigil?user=vigil&password=s3cret&sslmode=require",
			"postgres://db/vigil?user=vigil&password=xxxxx&sslmode=require", []string{"s3cret"}},
		{"URL password parameter, key percent-encoded", "postgres://db/vigil?pass%77ord=s3cret",
			"postgres://db/vigil?pass%77ord=xxxxx", []string{"s3cret"}},
		{"URL parameter whose key does not decode", "postgres://db/vigil?pa%ZZss=s3cret&sslmode=require",
			"postgres://db/vigil?pa%ZZss=xxxxx&sslmode=require", []string{"s3cret"}},
		{"URL sslpassword and password", "postgres://u:one1@db/vigil?sslkey=/k&sslpassword=two2&password=three3",
			"postgres://u:xxxxx@db/vigil?sslkey=/k&sslpassword=xxxxx&password=xxxxx", []string{"one1", "two2", "three3"}},
		{"URL percent-encoded password", "postgres://vigil:p%40ss%2Fw0rd@db/vigil", "postgres://vigil:xxxxx@db/vigil", []string{"p%40ss", "w0rd"}},
		{"URL with several hosts", "postgres://u:s3cret@h1:5432,h2:5433/db", "postgres://u:xxxxx@h1:5432,h2:5433/db", []string{"s3cret"}},
		{"URL with an IPv6 host", "postgres://u:s3cret@[::1]:5432/db", "postgres://u:xxxxx@[::1]:5432/db", []string{"s3cret"}},
		// pgx ends the userinfo at the first @ (libpq's rule) and would take
		// "x7@db" for the host; the shown text must hide both readings.
		{"URL with an unencoded @ in the password", "postgres://vigil:pw9@x7@db/vigil",
			"a postgres:// URL that does not parse unambiguously (not shown; percent-encode @, : and / in its user and password)", []string{"pw9", "x7@db"}},
		// A / ends the host list before the @: pgx reads host "vigil" and
		// port "pw9".
		{"URL with an unencoded / in the password", "postgres://vigil:pw9/x7@db/vigil",
			"a postgres:// URL that does not parse unambiguously (not shown; percent-encode @, : and / in its user and password)", []string{"pw9", "x7@"}},
		{"URL with a text port", "postgres://vigil:s3cret", "a postgres:// URL that does not parse unambiguously (not shown; percent-encode @, : and / in its user and password)", []string{"s3cret"}},
		{"keywords", "host=db user=vigil password=s3cret dbname=vigil", "host=db user=vigil password=xxxxx dbname=vigil", []string{"s3cret"}},
		{"keywords, quoted password", `host=db password='a b\'c' user=vigil`, "host=db password=xxxxx user=vigil", []string{"a b", `\'c`, "c'"}},
		{"keywords, escaped password", `password=a\ b\'c host=db`, "password=xxxxx host=db", []string{`a\`, `b\`, "'c"}},
		{"keywords, spaces around =", "host = db password =  s3cret\tuser=vigil", "host = db password =  xxxxx\tuser=vigil", []string{"s3cret"}},
		{"keywords, sslpassword", "host=db sslkey=/k sslpassword='k3y pass'", "host=db sslkey=/k sslpassword=xxxxx", []string{"k3y", "pass'"}},
		{"keywords, password twice", "password=one1 host=db password=two2", "password=xxxxx host=db password=xxxxx", []string{"one1", "two2"}},
		{"keywords, unterminated quote", "host=db password='s3cret", "key=value pairs that do not parse (not shown; quote a value that has spaces: password='a b')", []string{"s3cret"}},
		{"keywords, unquoted space", "host=db password=s3 cret", "key=value pairs that do not parse (not shown; quote a value that has spaces: password='a b')", []string{"s3", "cret"}},
		{"pgpass line", "db:5432:vigil:vigil:s3cret", "db:5432:vigil:vigil:xxxxx", []string{"s3cret"}},
		{"pgpass line, escaped colon", `db:*:*:vigil:s3\:cr\\et`, "db:*:*:vigil:xxxxx", []string{"s3", `cr\`}},
		{"pgpass line, colons in the password", "db:*:*:vigil:s3:cr:et", "db:*:*:vigil:xxxxx", []string{"s3", "cr", "et"}},
		{"embedded store", "sqlite:/var/lib/vigil/vigil.db", "sqlite:/var/lib/vigil/vigil.db", nil},
		{"another scheme", "mysql://root:s3cret@db/vigil", "an unrecognised mysql:// DSN (not shown)", []string{"s3cret", "root"}},
		{"anything else", "vigil:s3cret", "an unrecognised DSN (not shown)", []string{"s3cret"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := store.Redact(tc.dsn)
			if got != tc.want {
				t.Errorf("Redact(%q) = %q, want %q", tc.dsn, got, tc.want)
			}
			for _, s := range tc.secrets {
				if strings.Contains(got, s) {
					t.Errorf("Redact(%q) = %q shows %q", tc.dsn, got, s)
				}
			}
		})
	}
}

// TestOpenErrorsHidePasswords opens stores that cannot be opened, named in
// each form, and reads the errors: what they say, and no password.
func TestOpenErrorsHidePasswords(t *testing.T) {
	port := closedPort(t)
	for _, tc := range []struct {
		name, dsn string
		want      []string // in the error
		secrets   []string // not in the error
	}{
		{"URL, nothing listening", "postgres://vigil:s3cret@127.0.0.1:" + port + "/vigil?connect_timeout=2",
			[]string{"postgres://vigil:xxxxx@127.0.0.1:" + port, "connect"}, []string{"s3cret"}},
		{"keywords, nothing listening", `host=127.0.0.1 port=` + port + ` user=vigil password='a b\'c' connect_timeout=2`,
			[]string{"host=127.0.0.1 port=" + port + " user=vigil password=xxxxx", "connect"}, []string{"a b", `\'c`, "c'"}},
		// pgx's own message would show `password=xxxxx\'c'`.
		{"keywords, invalid port", `host=127.0.0.1 port=eighty password='a b\'c'`,
			[]string{"host=127.0.0.1 port=eighty password=xxxxx is not a valid PostgreSQL DSN", "invalid port"}, []string{"a b", `\'c`, "c'"}},
		{"keywords, unterminated quote", "host=127.0.0.1 password='s3cret", []string{"do not parse"}, []string{"s3cret"}},
		{"URL with an unencoded @", "postgres://vigil:pw9@x7@127.0.0.1/vigil", []string{"does not parse unambiguously"}, []string{"pw9", "x7@"}},
		{"URL with an invalid parameter", "postgres://vigil:s3cret@127.0.0.1/vigil?sslmode=sometimes",
			[]string{"postgres://vigil:xxxxx@127.0.0.1/vigil?sslmode=sometimes is not a valid PostgreSQL DSN", "sslmode"}, []string{"s3cret"}},
		{"pgpass line", "127.0.0.1:5432:vigil:vigil:s3cret", []string{"127.0.0.1:5432:vigil:vigil:xxxxx is a line of a .pgpass file"}, []string{"s3cret"}},
		{"unknown", "mysql://root:s3cret@db/vigil", []string{"an unrecognised mysql:// DSN (not shown)"}, []string{"s3cret", "root"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := store.Open(t.Context(), tc.dsn, store.Options{})
			if err == nil {
				_ = s.Close()
				t.Fatal("opened")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want %q in it", err, w)
				}
			}
			for _, s := range tc.secrets {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q shows %q", err, s)
				}
			}
		})
	}
}

// closedPort is a loopback port nothing listens on: connecting to it is
// refused at once.
func closedPort(t testing.TB) string {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// FuzzDSNPassword writes a DSN with a password in each form and checks
// that nothing shown of it depends on the password: Redact's text, and the
// error of opening it (a closed port: the driver parses it and dials). The
// same DSN with another password must read the same, so no byte of either
// password is shown.
func FuzzDSNPassword(f *testing.F) {
	for form := range dsnForms {
		f.Add(uint8(form), "vigil", "s3cret", "vigil")
		f.Add(uint8(form), "vigil", `a b\'c`, "db")
		f.Add(uint8(form), "", "p@ss/w:rd?&=%", "d b")
		f.Add(uint8(form), "us'er", "'", `\`)
	}
	port := closedPort(f)
	f.Fuzz(func(t *testing.T, form uint8, user, password, db string) {
		if password == "" || strings.ContainsAny(user+password+db, "\x00\n") {
			t.Skip() // a NUL or a newline is refused in every form; an empty password is none
		}
		build := dsnForms[int(form)%len(dsnForms)]
		dsn := build(port, user, password, db)
		other := "0ther-Pa55"
		if password == other {
			other = "n0ther-Pa55"
		}
		otherDSN := build(port, user, other, db)
		if cfg, err := pgx.ParseConfig(dsn); int(form)%len(dsnForms) < pgxForms && (err != nil || cfg.Password != password) {
			t.Fatalf("the test wrote %q, which pgx reads as password %q (%v)", dsn, cfg.Password, err)
		}

		shown, otherShown := store.Redact(dsn), store.Redact(otherDSN)
		if shown != otherShown {
			t.Errorf("Redact depends on the password:\n%q\n%q", shown, otherShown)
		}
		if len(password) >= 4 && strings.Contains(shown, password) && !strings.Contains(otherShown, password) {
			t.Errorf("Redact(%q) = %q shows the password", dsn, shown)
		}
		openErr, otherErr := openError(t, dsn), openError(t, otherDSN)
		if openErr != otherErr {
			t.Errorf("the error of opening depends on the password:\n%s\n%s", openErr, otherErr)
		}
		if len(password) >= 4 && strings.Contains(openErr, password) && !strings.Contains(otherErr, password) {
			t.Errorf("opening %q: %s shows the password", dsn, openErr)
		}
	})
}

// pgxForms is how many of dsnForms, the first ones, pgx reads a password
// from.
const pgxForms = 4

// dsnForms write a DSN with a user, a password and a database for a
// server on the loopback port.
var dsnForms = []func(port, user, password, db string) string{
	func(port, user, password, db string) string { // URL, userinfo
		return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%s/%s?connect_timeout=2", pct(user), pct(password), port, pct(db))
	},
	func(port, user, password, db string) string { // URL, parameter
		return fmt.Sprintf("postgresql://127.0.0.1:%s/%s?user=%s&password=%s&connect_timeout=2", port, pct(db), pct(user), pct(password))
	},
	func(port, user, password, db string) string { // keywords, quoted
		return fmt.Sprintf("host=127.0.0.1 port=%s user=%s password=%s dbname=%s connect_timeout=2", port, quote(user), quote(password), quote(db))
	},
	func(port, user, password, db string) string { // keywords, escaped
		return fmt.Sprintf("password=%s host=127.0.0.1 port=%s user=%s dbname=%s connect_timeout=2", escape(password), port, quote(user), quote(db))
	},
	func(port, user, password, db string) string { // keywords, sslpassword
		return fmt.Sprintf("host=127.0.0.1 port=%s user=%s sslpassword=%s dbname=%s connect_timeout=2", port, quote(user), quote(password), quote(db))
	},
	func(port, user, password, db string) string { // URL, sslpassword
		return fmt.Sprintf("postgres://%s@127.0.0.1:%s/%s?sslpassword=%s&connect_timeout=2", pct(user), port, pct(db), pct(password))
	},
	func(port, user, password, db string) string { // .pgpass line
		return strings.Join([]string{"127.0.0.1", port, pgpassEscape(db), pgpassEscape(user), pgpassEscape(password)}, ":")
	},
}

// pct percent-encodes every byte but letters and digits.
func pct(s string) string {
	var b strings.Builder
	for i := range len(s) {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// quote is s as a quoted libpq value.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// escape is s as an unquoted libpq value: every byte but letters and
// digits after a backslash.
func escape(s string) string {
	var b strings.Builder
	for i := range len(s) {
		c := s[i]
		if alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'; !alnum {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

func pgpassEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `:`, `\:`).Replace(s)
}

// openError is the text of the error of opening dsn ("" if it opened).
func openError(t *testing.T, dsn string) string {
	s, err := store.Open(context.Background(), dsn, store.Options{})
	if err == nil {
		_ = s.Close()
		t.Fatalf("opened %q", dsn)
	}
	return err.Error()
}

// FuzzRedactAnyString gives Redact any string pgx reads a password from,
// written any way at all: the password, where the string holds it once,
// is not shown. This holds Redact's reading of the forms to pgx's.
func FuzzRedactAnyString(f *testing.F) {
	for _, s := range []string{
		"postgres://vigil:s3cret@db/vigil", "postgres://db/?password=s3cret", "postgresql://u:p%40ssword@h:1,h2:2/d?sslmode=disable",
		"host=db password=s3cret", `password='a b\'c d' host=db`, `password=a\ bcdef`, "host=db\tpassword = 's3 cret'",
		"postgres://u:pa@ss@db/vigil", "postgres://u:pa/ssword@db", "password= s3cret", "postgres://[::1]:5432/d?password=s3cret",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := pgx.ParseConfig(s)
		if err != nil || len(cfg.Password) < 6 || strings.Count(s, cfg.Password) != 1 || strings.Contains(cfg.Password, "xx") {
			t.Skip() // too short to tell, or also elsewhere, or could be made of the mask
		}
		if shown := store.Redact(s); strings.Contains(shown, cfg.Password) {
			t.Errorf("Redact(%q) = %q shows the password %q", s, shown, cfg.Password)
		}
	})
}
