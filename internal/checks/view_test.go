package checks

import (
	"reflect"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

func TestRunDurations(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	p := func(kind monitor.PingKind, m int, rid string) store.LoggedPing {
		return store.LoggedPing{Kind: kind, At: at(m), RID: rid}
	}
	for name, tc := range map[string]struct {
		pings []store.LoggedPing // newest first
		want  map[int]time.Duration
	}{
		"a run": {
			pings: []store.LoggedPing{p(monitor.PingSuccess, 5, ""), p(monitor.PingStart, 0, "")},
			want:  map[int]time.Duration{0: 5 * time.Minute},
		},
		"log and ignored pings do not end a run": {
			pings: []store.LoggedPing{p(monitor.PingFail, 9, ""), p(monitor.PingIgnored, 5, ""), p(monitor.PingLog, 3, ""), p(monitor.PingStart, 1, "")},
			want:  map[int]time.Duration{0: 8 * time.Minute},
		},
		"run ids pair with their own start": {
			pings: []store.LoggedPing{p(monitor.PingSuccess, 10, "a"), p(monitor.PingSuccess, 7, "b"), p(monitor.PingStart, 2, "b"), p(monitor.PingStart, 1, "a")},
			want:  map[int]time.Duration{0: 9 * time.Minute, 1: 5 * time.Minute},
		},
		"an end closes the run: the next end has no start": {
			pings: []store.LoggedPing{p(monitor.PingSuccess, 6, ""), p(monitor.PingSuccess, 4, ""), p(monitor.PingStart, 1, "")},
			want:  map[int]time.Duration{1: 3 * time.Minute},
		},
		"a later start replaces the open one": {
			pings: []store.LoggedPing{p(monitor.PingSuccess, 6, ""), p(monitor.PingStart, 4, ""), p(monitor.PingStart, 1, "")},
			want:  map[int]time.Duration{0: 2 * time.Minute},
		},
		"not after 72 hours": {
			pings: []store.LoggedPing{p(monitor.PingSuccess, 72*60, ""), p(monitor.PingStart, 0, "")},
			want:  map[int]time.Duration{},
		},
	} {
		if got := RunDurations(tc.pings); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

func TestTags(t *testing.T) {
	if got := Tags("  prod  db "); !reflect.DeepEqual(got, []string{"prod", "db"}) {
		t.Errorf("Tags = %q", got)
	}
	for _, tc := range []struct {
		tags   string
		wanted []string
		want   bool
	}{
		{"prod db", nil, true},
		{"prod db", []string{"db"}, true},
		{"prod db", []string{"db", "prod"}, true},
		{"prod db", []string{"db", "staging"}, false},
		{"prod", []string{"Prod"}, false}, // case-sensitive
		{"prod", []string{"pro"}, false},  // whole tags
		{"prod", []string{""}, false},
	} {
		if got := HasAllTags(tc.tags, tc.wanted); got != tc.want {
			t.Errorf("HasAllTags(%q, %q) = %v", tc.tags, tc.wanted, got)
		}
	}
}
