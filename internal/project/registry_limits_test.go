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
	r.rebuildAll()
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
	r.rebuildAll()
	if len(*heard) != 0 {
		t.Errorf("told again: %q", *heard)
	}

	// The administrator raises the namespace's limit: every key counts.
	r.Limits.OnChange = r.Refresh
	r.Limits.SetOverrides(map[string]string{"big." + LimitsKeyKeyLimit: "1000"})
	r.rebuildAll()
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
	r.rebuildAll()
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
	r.rebuildAll()
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
		r.rebuildAll()
		return r
	}
	secret := projectSecret("busy", "vigil-project", map[string]string{DataReadWriteKeys: keyLines("busy", 0, 20)})
	burst := func(r *Registry, events int) float64 {
		return testing.AllocsPerRun(5, func() {
			for range events {
				r.Upsert(secret.DeepCopy())
			}
			r.rebuildAll()
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
	var cause stopCause
	hugeAllocs := testing.AllocsPerRun(3, func() { atLimit, stoppedAt, cause = parseKeysUpTo(huge, newLineBudget(1000)) })
	smallAllocs := testing.AllocsPerRun(3, func() { _, _, _ = parseKeysUpTo(small, newLineBudget(1000)) })
	if len(atLimit) != 1000 || stoppedAt != 1001 || cause != keyLimit {
		t.Fatalf("read %d keys, stopped at line %d (cause %d); want 1000, 1001, the key limit", len(atLimit), stoppedAt, cause)
	}
	if hugeAllocs > smallAllocs {
		t.Errorf("30,000 lines cost %.0f allocations, 1,001 cost %.0f: reading went past the limit", hugeAllocs, smallAllocs)
	}
	for _, tc := range []struct {
		data         string
		keys, others int
		read         int
		stoppedAt    int
		cause        stopCause
	}{
		{"", 10, -1, 0, 0, readAll},
		{keyLines("a", 0, 3), 3, -1, 3, 0, readAll},
		{keyLines("a", 0, 3) + "\n  \n", 3, -1, 3, 0, readAll},                          // only blank space follows
		{keyLines("a", 0, 3) + "# note\n", 3, -1, 3, 0, readAll},                        // a comment past the last key is no key cut
		{keyLines("a", 0, 3) + "# note\n" + keyLines("a", 3, 1), 3, -1, 3, 5, keyLimit}, // the next key is
		{"#c\n\n" + keyLines("a", 0, 3), 2, -1, 2, 5, keyLimit},                         // comments and blanks are not keys
		{keyLines("a", 0, 2) + "junk\n" + keyLines("a", 2, 1), 3, -1, 3, 0, readAll},
		{keyLines("a", 0, 3), 0, -1, 0, 1, keyLimit},
		{strings.Repeat("x", 5000) + "\n" + keyLines("a", 0, 1), 1, -1, 1, 0, readAll}, // an overlong line is malformed
		// Lines that are not keys have a budget of their own.
		{"#a\n#b\n" + keyLines("a", 0, 1), 5, 1, 0, 2, otherLimit},
		{"#a\n" + keyLines("a", 0, 1) + "\n" + keyLines("a", 1, 1), 5, 1, 1, 3, otherLimit}, // blank lines count too
		{"#a\n" + keyLines("a", 0, 2), 1, 1, 1, 3, keyLimit},                                // whichever budget is spent first
		{"#a\n" + keyLines("a", 0, 1), 5, 1, 1, 0, readAll},
		{keyLines("a", 0, 1) + "#a\n\n", 5, 1, 1, 0, readAll},                               // the budget is spent on a short blank tail
		{keyLines("a", 0, 1) + "#a\n" + strings.Repeat("\n", 5000), 5, 1, 1, 3, otherLimit}, // but not on a long one
	} {
		keys, stopped, cause := parseKeysUpTo([]byte(tc.data), &lineBudget{keys: tc.keys, others: tc.others})
		if len(keys) != tc.read || stopped != tc.stoppedAt || cause != tc.cause {
			t.Errorf("parseKeysUpTo(%.40q, %d keys, %d others) = %d keys, stopped at %d (cause %d); want %d, %d (%d)",
				tc.data, tc.keys, tc.others, len(keys), stopped, cause, tc.read, tc.stoppedAt, tc.cause)
		}
	}
}

// junk is about size bytes of lines that are not keys: half comment lines,
// half malformed ones, the shortest of each (the most lines a byte).
func junk(size int) []byte {
	return []byte(strings.Repeat("#\n", size/4) + strings.Repeat("x\n", size/4))
}

// A megabyte of comment and malformed lines is not read to its end: the
// budget of lines that are not keys stops it (counted in lines read and
// allocations, which do not depend on the machine's load).
func TestParseKeysStopsEarlyInJunk(t *testing.T) {
	const limit = 1000
	megabyte, few := junk(1<<20), junk(4*(limit+otherLineAllowance+1))
	var stoppedAt int
	var cause stopCause
	megabyteAllocs := testing.AllocsPerRun(3, func() { _, stoppedAt, cause = parseKeysUpTo(megabyte, newLineBudget(limit)) })
	fewAllocs := testing.AllocsPerRun(3, func() { _, _, _ = parseKeysUpTo(few, newLineBudget(limit)) })
	if read := stoppedAt - 1; read != limit+otherLineAllowance || cause != otherLimit {
		t.Errorf("read %d lines of %d (cause %d); want %d, the budget of lines that are not keys",
			read, strings.Count(string(megabyte), "\n"), cause, limit+otherLineAllowance)
	}
	if megabyteAllocs > fewAllocs {
		t.Errorf("a megabyte of junk lines cost %.0f allocations, %d bytes of them %.0f: reading went past the budget", megabyteAllocs, len(few), fewAllocs)
	}

	// A namespace of 20 such Secrets costs a build what a namespace of 20
	// small ones does: the budget is the namespace's, not each Secret's.
	secrets := func(size int) []*corev1.Secret {
		out := make([]*corev1.Secret, DefaultSecretLimit)
		for i := range out {
			out[i] = aged("junk", fmt.Sprintf("s%02d", i), i, nil)
			out[i].Data = map[string][]byte{DataReadWriteKeys: junk(size / 2), DataReadOnlyKeys: junk(size / 2)}
		}
		return out
	}
	big, small := secrets(1<<20-1<<10), secrets(4*(limit+otherLineAllowance+1))
	var p *part
	bigAllocs := testing.AllocsPerRun(3, func() { p = buildPart("junk", big, nil) })
	smallAllocs := testing.AllocsPerRun(3, func() { _ = buildPart("junk", small, nil) })
	if bigAllocs > smallAllocs {
		t.Errorf("20 Secrets of a megabyte of junk cost a build %.0f allocations, 20 small ones %.0f", bigAllocs, smallAllocs)
	}
	if msg := p.limited["s00"].message; !strings.Contains(msg, "more than 1100 lines that are not API keys") ||
		!strings.Contains(msg, "read-write-keys from line 1101 on and all of read-only-keys are ignored") || !strings.Contains(msg, "--api-key-limit") {
		t.Errorf("the first Secret is told %q", msg)
	}
	if msg := p.limited["s19"].message; !strings.Contains(msg, "all of read-write-keys and all of read-only-keys are ignored") {
		t.Errorf("the last Secret is told %q", msg)
	}
}

// Reading through a budget reads a prefix of what reading everything reads,
// no more lines than the budget allows, and says where it stopped.
func FuzzParseKeysUpTo(f *testing.F) {
	f.Add([]byte(keyLines("f", 0, 5)+"# c\n\nhcw_1 sha256:00\n"), 3, 2)
	f.Add([]byte("hcw_abcdefgh sha256:"+strings.Repeat("ab", 32)+"\r\n"), 1, 0)
	f.Fuzz(func(t *testing.T, data []byte, maxKeys, maxOthers int) {
		maxKeys, maxOthers = abs(maxKeys%50), abs(maxOthers%50)
		all := ParseKeys(data)
		b := &lineBudget{keys: maxKeys, others: maxOthers}
		keys, stoppedAt, cause := parseKeysUpTo(data, b)
		if len(keys) > min(maxKeys, len(all)) {
			t.Fatalf("%d keys up to %d, of %d", len(keys), maxKeys, len(all))
		}
		for i := range keys {
			if keys[i].Label != all[i].Label || string(keys[i].value) != string(all[i].value) {
				t.Fatalf("key %d differs", i)
			}
		}
		if len(all) > len(keys) && (stoppedAt == 0 || cause == readAll) {
			t.Fatalf("%d keys left unread, and stoppedAt is %d", len(all)-len(keys), stoppedAt)
		}
		lines := strings.Count(string(data), "\n") + 1
		if stoppedAt > 0 && (stoppedAt > lines || stoppedAt-1 > maxKeys+maxOthers) {
			t.Fatalf("stopped at line %d of %d, with a budget of %d lines", stoppedAt, lines, maxKeys+maxOthers)
		}
		if b.keys != maxKeys-len(keys) || b.keys < 0 || b.others < 0 {
			t.Fatalf("budget left: %+v, after %d keys of %d, %d other lines", *b, len(keys), maxKeys, maxOthers)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// Without limits set, the defaults bound a namespace: 20 Secrets, 1,000
// API keys.
func TestRegistryDefaultLimits(t *testing.T) {
	r := NewRegistry()
	for i := range 25 {
		r.Upsert(aged("crowded", fmt.Sprintf("s%02d", i), i, map[string]string{DataReadWriteKeys: keyLines("crowded", 100*i, 60)}))
	}
	r.rebuildAll()
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
