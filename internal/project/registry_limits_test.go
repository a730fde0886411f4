package project

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// apiKey is the i-th test key of a namespace: plaintext, 32 characters,
// with a label of its own.
func apiKey(ns string, i int) string {
	k := fmt.Sprintf("hcw_%08d%s", i, ns)
	return (k + strings.Repeat("x", KeyLength))[:KeyLength]
}

// keyLines is n keys from the first-th on, one a line.
func keyLines(ns string, first, n int) string {
	var b strings.Builder
	for i := first; i < first+n; i++ {
		b.WriteString(apiKey(ns, i))
		b.WriteByte('\n')
	}
	return b.String()
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// aged is a project Secret created i seconds after epoch.
func aged(ns, name string, i int, data map[string]string) *corev1.Secret {
	s := projectSecret(ns, name, data)
	s.CreationTimestamp = metav1.NewTime(epoch.Add(time.Duration(i) * time.Second))
	return s
}

type told struct{ secret, message string }

func listen(r *Registry) *[]told {
	var heard []told
	r.OnLimit = func(s *corev1.Secret, message string) { heard = append(heard, told{s.Name, message}) }
	return &heard
}

// Past the namespace's key limit, the later lines (by Secret age, then
// read-write before read-only) open nothing, the Secrets they are in are
// told what of them is ignored, and other namespaces are not affected.
func TestRegistryKeyLimit(t *testing.T) {
	r := NewRegistry()
	r.Limits = &Limits{DefaultKeyLimit: 100}
	heard := listen(r)
	// 80 read-write keys, a comment and blank lines (which do not count),
	// then 40 read-only: the limit falls on read-only line 22.
	first := aged("big", "first", 0, map[string]string{
		DataReadWriteKeys: "# rotated 2026-01\n\n" + keyLines("big", 0, 80),
		DataReadOnlyKeys:  keyLines("big", 80, 40),
	})
	second := aged("big", "second", 1, map[string]string{DataReadWriteKeys: keyLines("big", 200, 5)})
	small := aged("small", "vigil-project", 2, map[string]string{DataReadWriteKeys: keyLines("small", 0, 150)})
	for _, s := range []*corev1.Secret{second, small, first} {
		r.Upsert(s)
	}
	for _, tc := range []struct {
		key    string
		ns     string
		access Access
	}{
		{apiKey("big", 0), "big", ReadWrite},
		{apiKey("big", 79), "big", ReadWrite},
		{apiKey("big", 80), "big", ReadOnly},
		{apiKey("big", 99), "big", ReadOnly},
		{apiKey("big", 100), "", NoAccess}, // the 101st key
		{apiKey("big", 119), "", NoAccess},
		{apiKey("big", 200), "", NoAccess}, // in the newer Secret
		{apiKey("small", 99), "small", ReadWrite},
		{apiKey("small", 100), "", NoAccess},
	} {
		if ns, access := r.Authenticate(tc.key); ns != tc.ns || access != tc.access {
			t.Errorf("Authenticate(%s) = %q, %v; want %q, %v", tc.key, ns, access, tc.ns, tc.access)
		}
	}
	want := map[string]string{
		"first":         "in this Secret, read-only-keys from line 21 on are ignored",
		"second":        "in this Secret, all of read-write-keys are ignored",
		"vigil-project": "in this Secret, read-write-keys from line 101 on are ignored",
	}
	if len(*heard) != len(want) {
		t.Fatalf("told %d times, want %d: %q", len(*heard), len(want), *heard)
	}
	for _, h := range *heard {
		if !strings.Contains(h.message, want[h.secret]) || !strings.Contains(h.message, "more than 100 API keys") ||
			!strings.Contains(h.message, "--api-key-limit") || !strings.Contains(h.message, "."+LimitsKeyKeyLimit) {
			t.Errorf("told of %s: %q; want it to say %q, the limit and how to raise it", h.secret, h.message, want[h.secret])
		}
	}

	// Told once, not on every later event.
	*heard = nil
	r.Upsert(first.DeepCopy())
	r.Project("big")
	if len(*heard) != 0 {
		t.Errorf("told again: %q", *heard)
	}

	// The administrator raises the namespace's limit: every key counts.
	r.Limits.OnChange = r.Refresh
	r.Limits.SetOverrides(map[string]string{"big." + LimitsKeyKeyLimit: "1000"})
	if ns, _ := r.Authenticate(apiKey("big", 200)); ns != "big" {
		t.Errorf("after raising the limit, the newer Secret's key opens %q", ns)
	}
	if ns, _ := r.Authenticate(apiKey("small", 100)); ns != "" {
		t.Errorf("raising one namespace's limit raised another's: %q", ns)
	}
}

// Past the namespace's Secret limit, the newest Secrets open nothing, and
// each is told so.
func TestRegistrySecretLimit(t *testing.T) {
	r := NewRegistry()
	r.Limits = &Limits{DefaultSecretLimit: 3}
	heard := listen(r)
	for i := 5; i >= 0; i-- { // newest first: the order of events does not matter
		r.Upsert(aged("many", fmt.Sprintf("s%d", i), i, map[string]string{
			DataReadWriteKeys: keyLines("many", i, 1), DataPingKey: fmt.Sprintf("ping%018d", i)}))
	}
	for i := range 6 {
		ns, _ := r.Authenticate(apiKey("many", i))
		if want := map[bool]string{true: "many", false: ""}[i < 3]; ns != want {
			t.Errorf("the key of Secret s%d opens %q, want %q", i, ns, want)
		}
	}
	if len(*heard) != 3 {
		t.Fatalf("told %d times, want 3: %q", len(*heard), *heard)
	}
	for i, h := range *heard {
		if h.secret != fmt.Sprintf("s%d", i+3) || !strings.Contains(h.message, "more than 3 project Secrets") ||
			!strings.Contains(h.message, "--project-secret-limit") || !strings.Contains(h.message, "many."+LimitsKeySecretLimit) {
			t.Errorf("told %d: %+v", i, h)
		}
	}
	// An ignored Secret's ping key is no project's.
	if _, ok := r.ByPingKey(fmt.Sprintf("ping%018d", 5)); ok {
		t.Error("an ignored Secret's ping key opens the project")
	}
	// The oldest going, the next one counts.
	r.Remove(aged("many", "s0", 0, nil))
	if ns, _ := r.Authenticate(apiKey("many", 3)); ns != "many" {
		t.Errorf("after the oldest Secret went, s3's key opens %q", ns)
	}
}

// A burst of Secret events costs one build of their namespace's part, and
// an event costs the same however many other namespaces there are:
// counted in allocations, which do not depend on the machine's load.
func TestRegistryRebuildsOnlyWhatChanged(t *testing.T) {
	loaded := func(namespaces int) *Registry {
		r := NewRegistry()
		for i := range namespaces {
			ns := fmt.Sprintf("ns-%04d", i)
			r.Upsert(projectSecret(ns, "vigil-project", map[string]string{DataReadWriteKeys: keyLines(ns, 0, 20), DataPingKey: ns}))
		}
		r.Project("ns-0000")
		return r
	}
	secret := projectSecret("busy", "vigil-project", map[string]string{DataReadWriteKeys: keyLines("busy", 0, 20)})
	burst := func(r *Registry, events int) float64 {
		return testing.AllocsPerRun(5, func() {
			for range events {
				r.Upsert(secret.DeepCopy())
			}
			if ns, _ := r.Authenticate(apiKey("busy", 0)); ns != "busy" {
				t.Fatal("the busy namespace's key does not open it")
			}
		})
	}
	few, many := loaded(10), loaded(200)
	one, fifty := burst(few, 1), burst(few, 50)
	// Each event copies the Secret (about 40 allocations here); the
	// build is done once.
	copying := testing.AllocsPerRun(5, func() { _ = secret.DeepCopy() })
	if extra := fifty - one - 49*copying; extra > one/2 {
		t.Errorf("a burst of 50 events cost %.0f allocations, one event %.0f, the copies %.0f: the burst built more than once", fifty, one, 49*copying)
	}
	if crowded := burst(many, 1); crowded > 1.5*one {
		t.Errorf("an event cost %.0f allocations among 200 namespaces, %.0f among 10: it rebuilt other namespaces", crowded, one)
	}
}

// A namespace with a megabyte of key lines costs what its limit allows:
// reading stops at the limit.
func TestParseKeysStopsAtTheLimit(t *testing.T) {
	huge := []byte(keyLines("huge", 0, 30_000))
	small := []byte(keyLines("huge", 0, 1_001))
	var atLimit []StoredKey
	var stoppedAt int
	hugeAllocs := testing.AllocsPerRun(3, func() { atLimit, stoppedAt = parseKeysUpTo(huge, 1000) })
	smallAllocs := testing.AllocsPerRun(3, func() { _, _ = parseKeysUpTo(small, 1000) })
	if len(atLimit) != 1000 || stoppedAt != 1001 {
		t.Fatalf("read %d keys, stopped at line %d; want 1000, 1001", len(atLimit), stoppedAt)
	}
	if hugeAllocs > smallAllocs {
		t.Errorf("30,000 lines cost %.0f allocations, 1,001 cost %.0f: reading went past the limit", hugeAllocs, smallAllocs)
	}
	for _, tc := range []struct {
		data      string
		max       int
		keys      int
		stoppedAt int
	}{
		{"", 10, 0, 0},
		{keyLines("a", 0, 3), 3, 3, 0},
		{keyLines("a", 0, 3) + "\n  \n", 3, 3, 0},   // only blank space follows
		{keyLines("a", 0, 3) + "# note\n", 3, 3, 4}, // a comment is a line left unread
		{"#c\n\n" + keyLines("a", 0, 3), 2, 2, 5},   // comments and blanks do not count
		{keyLines("a", 0, 2) + "junk\n" + keyLines("a", 2, 1), 3, 3, 0},
		{keyLines("a", 0, 3), 0, 0, 1},
		{strings.Repeat("x", 5000) + "\n" + keyLines("a", 0, 1), 1, 1, 0}, // an overlong line is malformed
	} {
		keys, stopped := parseKeysUpTo([]byte(tc.data), tc.max)
		if len(keys) != tc.keys || stopped != tc.stoppedAt {
			t.Errorf("parseKeysUpTo(%.40q, %d) = %d keys, stopped at %d; want %d, %d", tc.data, tc.max, len(keys), stopped, tc.keys, tc.stoppedAt)
		}
	}
}

// Reading up to a limit reads a prefix of what reading everything reads,
// and says where it stopped.
func FuzzParseKeysUpTo(f *testing.F) {
	f.Add([]byte(keyLines("f", 0, 5)+"# c\n\nhcw_1 sha256:00\n"), 3)
	f.Add([]byte("hcw_abcdefgh sha256:"+strings.Repeat("ab", 32)+"\r\n"), 1)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		max %= 50
		if max < 0 {
			max = -max
		}
		all := ParseKeys(data)
		keys, stoppedAt := parseKeysUpTo(data, max)
		if len(keys) != min(max, len(all)) {
			t.Fatalf("%d keys up to %d, of %d", len(keys), max, len(all))
		}
		for i := range keys {
			if keys[i].Label != all[i].Label || string(keys[i].value) != string(all[i].value) {
				t.Fatalf("key %d differs", i)
			}
		}
		if len(all) > max && stoppedAt == 0 {
			t.Fatalf("%d keys past the limit %d, and stoppedAt is 0", len(all)-max, max)
		}
		if stoppedAt > 0 && stoppedAt > strings.Count(string(data), "\n")+1 {
			t.Fatalf("stopped at line %d of %d", stoppedAt, strings.Count(string(data), "\n")+1)
		}
	})
}

// Without limits set, the defaults bound a namespace: 20 Secrets, 1,000
// API keys.
func TestRegistryDefaultLimits(t *testing.T) {
	r := NewRegistry()
	for i := range 25 {
		r.Upsert(aged("crowded", fmt.Sprintf("s%02d", i), i, map[string]string{DataReadWriteKeys: keyLines("crowded", 100*i, 60)}))
	}
	for _, tc := range []struct {
		key   int
		opens bool
	}{
		{0, true}, {1639, true}, // Secret 16, its 40th key: the 1,000th
		{1640, false}, // Secret 16, its 41st key
		{1700, false}, // Secret 17, read after the limit
		{1959, false}, // Secret 19, the last counted Secret, but past the key limit
		{2000, false}, // Secret 20, past the Secret limit
	} {
		if ns, _ := r.Authenticate(apiKey("crowded", tc.key)); (ns == "crowded") != tc.opens {
			t.Errorf("key %d opens %q, want it to open the project: %v", tc.key, ns, tc.opens)
		}
	}
	if DefaultSecretLimit != 20 || DefaultKeyLimit != 1000 {
		t.Errorf("defaults changed (%d Secrets, %d keys): change this test's figures and the docs", DefaultSecretLimit, DefaultKeyLimit)
	}
}
