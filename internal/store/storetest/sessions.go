package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/store"
)

// session is a dashboard session of subject, created at t0 plus created
// and lasting eight hours, its ID that of the token named.
func session(token, subject string, created time.Duration) store.Session {
	return store.Session{
		ID: store.SessionID(token), Subject: subject, Username: "user-" + subject, Groups: []string{"ops"},
		CSRF: "csrf-" + token, Created: t0.Add(created), Expires: t0.Add(created + 8*time.Hour),
	}
}

// sessionFound reports whether the session with id is there at now.
func sessionFound(ctx context.Context, t *testing.T, s *store.Store, id string, now time.Time) bool {
	t.Helper()
	_, ok, err := s.Session(ctx, id, now)
	must(t, err)
	return ok
}

// sessionTests are the contract of the dashboard's sessions.
func sessionTests(ctx context.Context) map[string]func(t *testing.T, s *store.Store) {
	return map[string]func(t *testing.T, s *store.Store){
		"a dashboard session is read back whole until it expires, and gone once ended": func(t *testing.T, s *store.Store) {
			sess := store.Session{
				ID:       store.SessionID("the cookie's token"),
				Subject:  "https://issuer.example/realms/x|7f3c0a",
				Username: "oidc:alice@example.com",
				Groups:   []string{"oidc:ops", "oidc:<dev & test>", "système"},
				CSRF:     "c5a1d1e0b6",
				Created:  t0.Add(1500 * time.Nanosecond),
				Expires:  t0.Add(8*time.Hour + 2500*time.Nanosecond),
			}
			must(t, s.CreateSession(ctx, sess))
			bare := session("bare", "bob", 0)
			bare.Groups = nil
			must(t, s.CreateSession(ctx, bare))

			got, ok, err := s.Session(ctx, sess.ID, t0.Add(time.Hour))
			must(t, err)
			want := sess
			want.Created, want.Expires = t0.Add(time.Microsecond), t0.Add(8*time.Hour+2*time.Microsecond)
			if !ok || !reflect.DeepEqual(got, want) {
				t.Fatalf("read back: %+v (%v), want %+v", got, ok, want)
			}
			if got.Created.Location() != time.UTC || got.Expires.Location() != time.UTC {
				t.Errorf("times read back in %v and %v, want UTC", got.Created.Location(), got.Expires.Location())
			}
			if got, ok, err := s.Session(ctx, bare.ID, t0); err != nil || !ok || got.Groups != nil || got.Username != bare.Username {
				t.Errorf("a session with no groups: %+v (%v, %v)", got, ok, err)
			}
			// It lasts until its expiry, exclusive.
			if !sessionFound(ctx, t, s, sess.ID, want.Expires.Add(-time.Microsecond)) {
				t.Error("gone a microsecond before it expires")
			}
			if sessionFound(ctx, t, s, sess.ID, want.Expires) {
				t.Error("found when it expires")
			}
			if sessionFound(ctx, t, s, sess.ID, want.Expires.Add(time.Hour)) {
				t.Error("found after it expired")
			}
			for _, id := range []string{store.SessionID("another token"), "the cookie's token", "", "\x00\xff"} {
				if sessionFound(ctx, t, s, id, t0) {
					t.Errorf("a session never created (%q) is found", id)
				}
			}
			// An ID is created once; the first stays as it was.
			again := sess
			again.Subject, again.Username = "mallory", "mallory"
			if err := s.CreateSession(ctx, again); err == nil {
				t.Error("a second session with the same ID was created")
			}
			if got, _, _ := s.Session(ctx, sess.ID, t0); got.Subject != sess.Subject {
				t.Errorf("a second create with its ID changed the session: %+v", got)
			}

			must(t, s.EndSession(ctx, sess.ID))
			if sessionFound(ctx, t, s, sess.ID, t0) {
				t.Error("found after it ended")
			}
			must(t, s.EndSession(ctx, sess.ID)) // ending it again is nothing
			if !sessionFound(ctx, t, s, bare.ID, t0) {
				t.Error("another session ended with it")
			}
		},
		"all of a subject's dashboard sessions end at once, and no one else's": func(t *testing.T, s *store.Store) {
			for i := range 3 {
				must(t, s.CreateSession(ctx, session(fmt.Sprint("alice-", i), "alice", time.Duration(i)*time.Second)))
			}
			must(t, s.CreateSession(ctx, session("bob-0", "bob", 0)))
			must(t, s.CreateSession(ctx, session("alicia-0", "alicia", 0)))
			n, err := s.EndSessionsOf(ctx, "alice")
			must(t, err)
			if n != 3 {
				t.Fatalf("ended %d of alice's sessions, want 3", n)
			}
			for i := range 3 {
				if sessionFound(ctx, t, s, store.SessionID(fmt.Sprint("alice-", i)), t0) {
					t.Errorf("alice's session %d is still there", i)
				}
			}
			for _, token := range []string{"bob-0", "alicia-0"} {
				if !sessionFound(ctx, t, s, store.SessionID(token), t0) {
					t.Errorf("%s ended with alice's", token)
				}
			}
			if n, err := s.EndSessionsOf(ctx, "alice"); err != nil || n != 0 {
				t.Errorf("ending alice's sessions again: %d, %v", n, err)
			}
			if n, err := s.EndSessionsOf(ctx, "nobody"); err != nil || n != 0 {
				t.Errorf("ending a stranger's sessions: %d, %v", n, err)
			}
		},
		"a subject's dashboard session past its bound ends its oldest": func(t *testing.T, s *store.Store) {
			token := func(i int) string { return fmt.Sprint("alice-", i) }
			// Created out of order: the oldest is the one created at t0,
			// not the first inserted.
			for i := range store.MaxSessionsPerSubject {
				must(t, s.CreateSession(ctx, session(token(i), "alice", time.Duration((i+5)%store.MaxSessionsPerSubject)*time.Second)))
			}
			must(t, s.CreateSession(ctx, session("bob-0", "bob", -time.Hour)))
			oldest := store.MaxSessionsPerSubject - 5 // created at t0
			for i := range store.MaxSessionsPerSubject {
				if !sessionFound(ctx, t, s, store.SessionID(token(i)), t0) {
					t.Fatalf("alice's session %d of %d is gone", i+1, store.MaxSessionsPerSubject)
				}
			}
			must(t, s.CreateSession(ctx, session("alice-new", "alice", time.Hour)))
			if sessionFound(ctx, t, s, store.SessionID(token(oldest)), t0) {
				t.Error("alice's oldest session stayed past her bound")
			}
			for i := range store.MaxSessionsPerSubject {
				if i != oldest && !sessionFound(ctx, t, s, store.SessionID(token(i)), t0) {
					t.Errorf("alice's session %d ended, not her oldest", i)
				}
			}
			for _, tok := range []string{"alice-new", "bob-0"} {
				if !sessionFound(ctx, t, s, store.SessionID(tok), t0.Add(time.Hour)) {
					t.Errorf("%s is not there", tok)
				}
			}
			if n, err := s.EndSessionsOf(ctx, "alice"); err != nil || n != store.MaxSessionsPerSubject {
				t.Errorf("alice has %d sessions (%v), want %d", n, err, store.MaxSessionsPerSubject)
			}
		},
		"pruning deletes the dashboard sessions expired, and only those": func(t *testing.T, s *store.Store) {
			short := func(token string, lasts time.Duration) store.Session {
				sess := session(token, "alice", 0)
				sess.Expires = t0.Add(lasts)
				return sess
			}
			expired := []store.Session{short("a", time.Minute), short("b", time.Hour), short("c", 2*time.Hour)}
			live := []store.Session{short("d", 2*time.Hour+time.Microsecond), short("e", 9*time.Hour)}
			for _, sess := range append(append([]store.Session{}, expired...), live...) {
				must(t, s.CreateSession(ctx, sess))
			}
			now := t0.Add(2 * time.Hour)
			if n, err := s.PruneSessions(ctx, t0); err != nil || n != 0 {
				t.Fatalf("pruned %d sessions before any expired (%v)", n, err)
			}
			n, err := s.PruneSessions(ctx, now)
			must(t, err)
			if n != len(expired) {
				t.Fatalf("pruned %d sessions, want %d", n, len(expired))
			}
			// Read at t0, when all were alive: the pruned ones are gone.
			for _, sess := range expired {
				if sessionFound(ctx, t, s, sess.ID, t0) {
					t.Errorf("an expired session (%s) stayed", sess.Expires.Sub(t0))
				}
			}
			for _, sess := range live {
				if !sessionFound(ctx, t, s, sess.ID, now) {
					t.Errorf("a live session (%s) was pruned", sess.Expires.Sub(t0))
				}
			}
			if n, err := s.PruneSessions(ctx, now); err != nil || n != 0 {
				t.Errorf("pruning again: %d, %v", n, err)
			}
		},
		"a dashboard session too large or not text is refused, and nothing written": func(t *testing.T, s *store.Store) {
			// At the bounds exactly, a session is kept whole.
			full := session("full", "alice", 0)
			full.Subject = strings.Repeat("s", store.MaxSessionField)
			full.Username = strings.Repeat("u", store.MaxSessionField)
			full.CSRF = strings.Repeat("c", store.MaxSessionField)
			full.ID = strings.Repeat("f", store.MaxSessionField)
			full.Groups = make([]string, store.MaxSessionGroups)
			for i := range full.Groups {
				full.Groups[i] = fmt.Sprintf("%03d", i) + strings.Repeat("g", store.MaxSessionGroupBytes-3)
			}
			must(t, s.CreateSession(ctx, full))
			if got, ok, err := s.Session(ctx, full.ID, t0); err != nil || !ok || !reflect.DeepEqual(got, full) {
				t.Fatalf("a session at every bound read back as %d groups (%v, %v)", len(got.Groups), ok, err)
			}

			const secret = "the-secret-csrf-token"
			for _, tc := range []struct {
				name   string
				change func(*store.Session)
			}{
				{"an ID too long", func(s *store.Session) { s.ID = strings.Repeat("a", store.MaxSessionField+1) }},
				{"a subject too long", func(s *store.Session) { s.Subject = strings.Repeat("s", store.MaxSessionField+1) }},
				{"a username too long", func(s *store.Session) { s.Username = strings.Repeat("u", store.MaxSessionField+1) }},
				{"a CSRF token too long", func(s *store.Session) { s.CSRF = secret + strings.Repeat("c", store.MaxSessionField) }},
				{"too many groups", func(s *store.Session) { s.Groups = make([]string, store.MaxSessionGroups+1) }},
				{"a group too long", func(s *store.Session) {
					s.Groups = []string{"ops", strings.Repeat("g", store.MaxSessionGroupBytes+1)}
				}},
				{"no ID", func(s *store.Session) { s.ID = "" }},
				{"no subject", func(s *store.Session) { s.Subject = "" }},
				{"no username", func(s *store.Session) { s.Username = "" }},
				{"no CSRF token", func(s *store.Session) { s.CSRF = "" }},
				{"a NUL in the username", func(s *store.Session) { s.Username = "ali\x00ce" }},
				{"a subject not UTF-8", func(s *store.Session) { s.Subject = "refused\xff" }},
				{"a group not UTF-8", func(s *store.Session) { s.Groups = []string{"\xc3("} }},
				{"no expiry", func(s *store.Session) { s.Expires = time.Time{} }},
				{"no creation", func(s *store.Session) { s.Created = time.Time{} }},
				{"an expiry before its creation", func(s *store.Session) { s.Expires = s.Created.Add(-time.Second) }},
				{"an expiry at its creation", func(s *store.Session) { s.Expires = s.Created.Add(time.Nanosecond) }},
			} {
				sess := session("refused-"+tc.name, "refused", 0)
				sess.CSRF = secret
				tc.change(&sess)
				err := s.CreateSession(ctx, sess)
				if !errors.Is(err, store.ErrInvalidSession) {
					t.Errorf("%s: %v, want ErrInvalidSession", tc.name, err)
					continue
				}
				if strings.Contains(err.Error(), secret) || (len(sess.ID) > 0 && strings.Contains(err.Error(), sess.ID)) {
					t.Errorf("%s: the error shows a token: %v", tc.name, err)
				}
				if sessionFound(ctx, t, s, sess.ID, t0) {
					t.Errorf("%s: the session was created", tc.name)
				}
			}
			if n, err := s.EndSessionsOf(ctx, "refused"); err != nil || n != 0 {
				t.Errorf("%d refused sessions were written (%v)", n, err)
			}
			if n, err := s.EndSessionsOf(ctx, full.Subject); err != nil || n != 1 {
				t.Errorf("the session at every bound: %d (%v)", n, err)
			}
		},
	}
}

// sessionDSNTests are the contract of the dashboard's sessions that needs
// the database: a table filled to its bound, stores sharing it.
func sessionDSNTests(ctx context.Context) map[string]func(t *testing.T, dsn string) {
	return map[string]func(t *testing.T, dsn string){
		"a full sessions table makes room by pruning the expired, and otherwise refuses a session and ends nothing": func(t *testing.T, dsn string) {
			db, err := store.MigrateTo(ctx, dsn, 0)
			must(t, err)
			defer func() { _ = db.Close() }()
			// The table at its bound, each of 5,000 subjects with 20
			// sessions; the first 1,200 (more than one pruning
			// transaction takes) expired at t0.
			const expired = 1_200
			fill := func(from, to, lastExpired int) {
				t.Helper()
				stmt := fmt.Sprintf(`INSERT INTO dashboard_sessions (id, subject, username, groups_json, csrf, created, expires)
					WITH RECURSIVE i(n) AS (SELECT %d UNION ALL SELECT n + 1 FROM i WHERE n < %d)
					SELECT 'fill-' || n, 'filler-' || (n %% 5000), 'someone', '[]', 'csrf', %d + n,
						CASE WHEN n <= %d THEN %d ELSE %d END FROM i`,
					from, to, t0.Add(-8*time.Hour).UnixMicro(), lastExpired, t0.UnixMicro(), t0.Add(time.Hour).UnixMicro())
				if _, err := db.ExecContext(ctx, stmt); err != nil {
					t.Fatalf("filling the sessions table: %v", err)
				}
			}
			count := func(where string) int {
				t.Helper()
				var n int
				must(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM dashboard_sessions`+where).Scan(&n))
				return n
			}
			fill(1, store.MaxSessions, expired)
			s, err := store.Open(ctx, dsn, store.Options{})
			must(t, err)
			defer func() { _ = s.Close() }()

			// Expired sessions make room.
			first := session("first", "newcomer", 0)
			must(t, s.CreateSession(ctx, first))
			if !sessionFound(ctx, t, s, first.ID, t0) {
				t.Fatal("the session made room for is not there")
			}
			if n := count(` WHERE expires <= ` + fmt.Sprint(t0.UnixMicro())); n != 0 {
				t.Errorf("%d expired sessions left after making room", n)
			}
			if n := count(""); n != store.MaxSessions-expired+1 {
				t.Errorf("%d sessions, want %d", n, store.MaxSessions-expired+1)
			}

			// Full again, with none expired: refused, nothing ended. The
			// subject has as many sessions as it may, so a create that
			// went as far as its bound would end its oldest.
			fill(2, expired, 0) // the pruned ones but one, alive
			if n := count(""); n != store.MaxSessions {
				t.Fatalf("%d sessions, want %d", n, store.MaxSessions)
			}
			before := count(` WHERE subject = 'filler-7'`)
			refused := session("refused", "filler-7", time.Minute)
			start := time.Now()
			err = s.CreateSession(ctx, refused)
			t.Logf("a create refused with %d sessions took %v", store.MaxSessions, time.Since(start))
			if !errors.Is(err, store.ErrTooManySessions) {
				t.Fatalf("a session past the bound: %v, want ErrTooManySessions", err)
			}
			if sessionFound(ctx, t, s, refused.ID, t0) {
				t.Error("the refused session was created")
			}
			if n := count(""); n != store.MaxSessions {
				t.Errorf("%d sessions after the refusal, want %d", n, store.MaxSessions)
			}
			if n := count(` WHERE subject = 'filler-7'`); n != before || before != store.MaxSessionsPerSubject {
				t.Errorf("the refused session's subject has %d sessions, had %d", n, before)
			}

			// One ended makes room for one.
			must(t, s.EndSession(ctx, first.ID))
			must(t, s.CreateSession(ctx, refused))
			if !sessionFound(ctx, t, s, refused.ID, t0) {
				t.Error("the session is not there once there was room")
			}
		},
		"a dashboard session ended through one store is gone for another sharing the database": func(t *testing.T, dsn string) {
			a, err := store.Open(ctx, dsn, store.Options{})
			must(t, err)
			defer func() { _ = a.Close() }()
			b, err := store.Open(ctx, dsn, store.Options{})
			must(t, err)
			defer func() { _ = b.Close() }()
			one, two := session("one", "alice", 0), session("two", "alice", time.Second)
			must(t, a.CreateSession(ctx, one))
			must(t, a.CreateSession(ctx, two))
			if !sessionFound(ctx, t, b, one.ID, t0) {
				t.Fatal("a session created through one store is not found through the other")
			}
			must(t, b.EndSession(ctx, one.ID))
			if sessionFound(ctx, t, a, one.ID, t0) {
				t.Error("a session ended through the other store is still found")
			}
			if n, err := b.EndSessionsOf(ctx, "alice"); err != nil || n != 1 {
				t.Errorf("ending alice's sessions: %d, %v", n, err)
			}
			if sessionFound(ctx, t, a, two.ID, t0) {
				t.Error("a session of a subject whose sessions ended through the other store is still found")
			}
		},
	}
}
