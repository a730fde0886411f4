package project

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNewAPIKeyShape(t *testing.T) {
	for _, tc := range []struct {
		access Access
		prefix string
	}{{ReadWrite, "hcw_"}, {ReadOnly, "hcr_"}} {
		key, stored, err := NewAPIKey(tc.access)
		if err != nil {
			t.Fatal(err)
		}
		if len(key) != KeyLength || !strings.HasPrefix(key, tc.prefix) || strings.ContainsAny(key[4:], "-_") {
			t.Errorf("key %q: want 32 characters starting with %s and no - or _ after it", key, tc.prefix)
		}
		if strings.Contains(stored, key) {
			t.Errorf("stored form %q contains the key in plaintext", stored)
		}
		if !strings.HasPrefix(stored, key[:12]+" sha256:") {
			t.Errorf("stored form %q: want label %q and a sha256 digest", stored, key[:12])
		}
	}
}

func TestMatch(t *testing.T) {
	rw, rwStored, _ := NewAPIKey(ReadWrite)
	ro, roStored, _ := NewAPIKey(ReadOnly)
	legacy := strings.Repeat("X", 32)
	otherRW, _, _ := NewAPIKey(ReadWrite)
	data := map[string][]byte{
		DataReadWriteKeys: []byte("# comment\n" + rwStored + "\n\n" + legacy + "\nnot a key line\n"),
		DataReadOnlyKeys:  []byte(roStored),
	}
	keys := KeysFromSecretData(data)
	for _, tc := range []struct {
		name      string
		presented string
		want      Access
	}{
		{"hashed read-write key", rw, ReadWrite},
		{"hashed read-only key", ro, ReadOnly},
		{"legacy plaintext key", legacy, ReadWrite},
		{"another project's key", otherRW, NoAccess},
		{"empty", "", NoAccess},
		{"right prefix, wrong length", rw[:31], NoAccess},
		{"key with one character changed", rw[:31] + string(rw[31]^1), NoAccess},
		{"the stored form itself", rwStored, NoAccess},
		{"the label", rw[:12], NoAccess},
	} {
		if got := keys.Match(tc.presented); got != tc.want {
			t.Errorf("%s: Match = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseKeysSkipsMalformedLines(t *testing.T) {
	got := ParseKeys([]byte("hcw_abcdefgh sha256:zz\nhcw_abcdefgh sha256:abcd\ntooshort\n"))
	if len(got) != 0 {
		t.Errorf("ParseKeys kept %d malformed entries", len(got))
	}
}

func TestMergeAndAppend(t *testing.T) {
	a, aStored, _ := NewAPIKey(ReadWrite)
	b, bStored, _ := NewAPIKey(ReadWrite)
	data := AppendKey(AppendKey(nil, aStored), bStored)
	if strings.Count(string(data), "\n") != 2 {
		t.Fatalf("AppendKey: %q", data)
	}
	keys := Keys{}.Merge(KeysFromSecretData(map[string][]byte{DataReadWriteKeys: data}))
	if keys.Match(a) != ReadWrite || keys.Match(b) != ReadWrite {
		t.Error("both appended keys should match")
	}
}

func TestNewPingKey(t *testing.T) {
	k, err := NewPingKey()
	if err != nil {
		t.Fatal(err)
	}
	if len(k) != 22 || strings.ToLower(k) != k || strings.ContainsAny(k, "-_") {
		t.Errorf("ping key %q: want 22 lowercase characters without - or _", k)
	}
}

func projectSecret(ns, name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{SecretLabel: "true"}}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestRegistry(t *testing.T) {
	aRW, aRWStored, _ := NewAPIKey(ReadWrite)
	aRO, aROStored, _ := NewAPIKey(ReadOnly)
	bRW, bRWStored, _ := NewAPIKey(ReadWrite)
	legacy := strings.Repeat("X", 32)
	r := NewRegistry()
	a := projectSecret("team-a", "vigil-project", map[string]string{
		DataReadWriteKeys: aRWStored + "\n" + legacy, DataReadOnlyKeys: aROStored,
		DataPingKey: "pingaaaaaaaaaaaaaaaaaa", DataBadgeKey: "badge-a", DataSigningSecret: "s-a"})
	b := projectSecret("team-b", "keys", map[string]string{DataReadWriteKeys: bRWStored, DataPingKey: "pingbbbbbbbbbbbbbbbbbb"})
	r.Upsert(a)
	r.Upsert(b)
	r.rebuildAll()

	for _, tc := range []struct {
		key    string
		ns     string
		access Access
	}{
		{aRW, "team-a", ReadWrite}, {aRO, "team-a", ReadOnly}, {legacy, "team-a", ReadWrite},
		{bRW, "team-b", ReadWrite}, {"hcw_" + strings.Repeat("z", 28), "", NoAccess}, {"short", "", NoAccess},
	} {
		ns, access := r.Authenticate(tc.key)
		if ns != tc.ns || access != tc.access {
			t.Errorf("Authenticate(%q) = %q, %v; want %q, %v", tc.key, ns, access, tc.ns, tc.access)
		}
	}
	if info, ok := r.ByPingKey("pingbbbbbbbbbbbbbbbbbb"); !ok || info.Namespace != "team-b" {
		t.Errorf("ByPingKey: %+v %v", info, ok)
	}
	if _, ok := r.ByPingKey("PINGBBBBBBBBBBBBBBBBBB"); ok {
		t.Error("ping keys are case-sensitive")
	}
	if info, ok := r.ByBadgeKey("badge-a"); !ok || info.SigningSecret != "s-a" {
		t.Errorf("ByBadgeKey: %+v %v", info, ok)
	}

	// A Secret that loses its label no longer opens anything.
	unlabelled := b.DeepCopy()
	unlabelled.Labels = nil
	r.Upsert(unlabelled)
	r.rebuildAll()
	if ns, _ := r.Authenticate(bRW); ns != "" {
		t.Error("an unlabelled Secret's key still authenticates")
	}
	// Deleting a Secret forgets its keys.
	r.Remove(a)
	r.rebuildAll()
	if ns, _ := r.Authenticate(aRW); ns != "" {
		t.Error("a deleted Secret's key still authenticates")
	}
	if _, ok := r.Project("team-a"); ok {
		t.Error("a deleted project is still known")
	}
}

func TestRegistryKeysAreUniqueAcrossProjects(t *testing.T) {
	victimRW, victimStored, _ := NewAPIKey(ReadWrite)
	old := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	victim := projectSecret("victim", "vigil-project", map[string]string{
		DataReadWriteKeys: victimStored, DataPingKey: "pingvvvvvvvvvvvvvvvvvv", DataBadgeKey: "badge-v"})
	victim.CreationTimestamp = old
	// The attacker's namespace sorts first and its Secret copies every key.
	copied := projectSecret("aaa-attacker", "vigil-project", map[string]string{
		DataReadWriteKeys: victimStored, DataPingKey: "pingvvvvvvvvvvvvvvvvvv", DataBadgeKey: "badge-v"})
	copied.CreationTimestamp = metav1.NewTime(old.Add(time.Hour))

	var heard []string
	r := NewRegistry()
	r.OnConflict = func(s *corev1.Secret, what string) { heard = append(heard, s.Namespace+"/"+s.Name+" "+what) }
	// In either order of events, on every rebuild, the older Secret wins.
	for _, order := range [][]*corev1.Secret{{victim, copied}, {copied, victim}} {
		r = NewRegistry()
		heard = nil
		r.OnConflict = func(s *corev1.Secret, what string) { heard = append(heard, s.Namespace+"/"+s.Name+" "+what) }
		for _, s := range order {
			r.Upsert(s)
		}
		r.rebuildAll()
		if ns, access := r.Authenticate(victimRW); ns != "victim" || access != ReadWrite {
			t.Errorf("the victim's key opens %q (%v)", ns, access)
		}
		if info, ok := r.ByPingKey("pingvvvvvvvvvvvvvvvvvv"); !ok || info.Namespace != "victim" {
			t.Errorf("ByPingKey = %+v, %v; want the victim's", info, ok)
		}
		if info, ok := r.ByBadgeKey("badge-v"); !ok || info.Namespace != "victim" {
			t.Errorf("ByBadgeKey = %+v, %v; want the victim's", info, ok)
		}
		if info, _ := r.Project("aaa-attacker"); info.PingKey != "" || info.BadgeKey != "" {
			t.Errorf("the copier's project shows keys it does not own: %+v", info)
		}
		sort.Strings(heard)
		want := []string{"aaa-attacker/vigil-project API key " + victimRW[:12], "aaa-attacker/vigil-project badge key", "aaa-attacker/vigil-project ping key"}
		if !reflect.DeepEqual(heard, want) {
			t.Errorf("conflicts heard = %q, want %q", heard, want)
		}
		// Told once, not on every later event.
		heard = nil
		r.Upsert(victim)
		r.rebuildAll()
		if len(heard) != 0 {
			t.Errorf("conflicts told again: %q", heard)
		}
	}
	// Without the victim's Secret, the copy is the only holder, and works.
	r.Remove(victim)
	r.rebuildAll()
	if info, ok := r.ByPingKey("pingvvvvvvvvvvvvvvvvvv"); !ok || info.Namespace != "aaa-attacker" {
		t.Errorf("ByPingKey after the victim's Secret went = %+v, %v", info, ok)
	}
}
