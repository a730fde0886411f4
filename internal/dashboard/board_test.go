package dashboard

import (
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestQuery(t *testing.T) {
	for _, tc := range []struct {
		raw, defaultSort string
		want             query
		url              string
	}{
		{"", "name", query{Sort: "name", Page: 1}, "/"},
		{"q=+backup+&tag=prod&tag=db&tag=prod&sort=last&page=3", "name", query{Search: "backup", Tags: []string{"prod", "db"}, Sort: "last", Page: 3},
			"/?page=3&q=backup&sort=last&tag=prod&tag=db"},
		{"sort=bogus&page=-4", "name", query{Sort: "name", Page: 1}, "/"},
		{"tag=" + strings.Repeat("t", 101) + "&q=" + strings.Repeat("é", 101), "name", query{Search: strings.Repeat("é", 100), Sort: "name", Page: 1},
			"/?q=" + strings.Repeat("%C3%A9", 100)},
		{"wall=1&sort=name", "name", query{Sort: "status", Page: 1, Wall: true}, "/?wall=1"},
		// A person's board: worst first unless asked otherwise; by project
		// and status.
		{"", "status", query{Sort: "status", Page: 1}, "/"},
		{"sort=name&project=team-a&state=down", "status", query{Sort: "name", Project: "team-a", State: "down", Page: 1},
			"/?project=team-a&sort=name&state=down"},
		{"state=bogus&project=" + strings.Repeat("n", 64), "status", query{Sort: "status", Page: 1}, "/"},
	} {
		v, _ := url.ParseQuery(tc.raw)
		q := parseQuery(v, tc.defaultSort)
		tc.want.defaultSort = tc.defaultSort
		if !reflect.DeepEqual(q, tc.want) {
			t.Errorf("parseQuery(%q) = %+v, want %+v", tc.raw, q, tc.want)
		}
		if got := q.url(); got != tc.url {
			t.Errorf("url of %q = %q, want %q", tc.raw, got, tc.url)
		}
		// The URL is the state: parsing it again gives the same query.
		u, _ := url.Parse(q.url())
		if again := parseQuery(u.Query(), tc.defaultSort); !reflect.DeepEqual(again, q) {
			t.Errorf("round trip of %q: %+v", tc.raw, again)
		}
	}
	q := parseQuery(url.Values{"tag": {"a"}, "page": {"2"}}, "name")
	if got := q.withTag("b"); !reflect.DeepEqual(got.Tags, []string{"a", "b"}) || got.Page != 1 {
		t.Errorf("withTag adds: %+v", got)
	}
	if got := q.withTag("a"); len(got.Tags) != 0 || len(q.Tags) != 1 {
		t.Errorf("withTag removes without touching the original: %+v, %+v", got, q)
	}
	if got := q.withProject("team-a"); got.Project != "team-a" || got.Page != 1 || got.withProject("team-a").Project != "" {
		t.Errorf("withProject narrows, and again widens: %+v", got)
	}
	if got := q.withState("down"); got.State != "down" || got.withState("down").State != "" {
		t.Errorf("withState narrows, and again widens: %+v", got)
	}
}

func TestSortRows(t *testing.T) {
	now := time.Now()
	rows := []row{
		{ID: "1", Name: "b", order: 3, LastPing: now.Add(-time.Hour)},
		{ID: "2", Name: "A", order: 0},
		{ID: "3", Name: "c", order: 1, LastPing: now},
	}
	names := func() (out []string) {
		for _, r := range rows {
			out = append(out, r.Name)
		}
		return out
	}
	for by, want := range map[string][]string{
		"name":   {"A", "b", "c"},
		"status": {"A", "c", "b"},
		"last":   {"c", "b", "A"}, // most recent first, never last
	} {
		sortRows(rows, by)
		if got := names(); !reflect.DeepEqual(got, want) {
			t.Errorf("sort by %s = %v, want %v", by, got, want)
		}
	}
}

// TestSnapshotsShared: boards open on one project share its snapshot for a
// second; a clock that moves (a test's fake clock) or another project takes
// a new one.
func TestSnapshotsShared(t *testing.T) {
	var ss snapshots
	takes := 0
	take := func(now time.Time) (*snapshot, error) {
		takes++
		return &snapshot{at: now}, nil
	}
	t0 := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)
	first, _ := ss.of("team-a", t0, take)
	again, _ := ss.of("team-a", t0.Add(200*time.Millisecond), take)
	if again != first || takes != 1 {
		t.Errorf("a second board within the second took its own snapshot (%d taken)", takes)
	}
	if other, _ := ss.of("team-b", t0, take); other == first || takes != 2 {
		t.Error("another project shares team-a's snapshot")
	}
	if later, _ := ss.of("team-a", t0.Add(time.Hour), take); later == first || !later.at.Equal(t0.Add(time.Hour)) {
		t.Error("a snapshot from an hour ago was shown")
	}
	if _, err := ss.of("team-c", t0, func(time.Time) (*snapshot, error) { return nil, errors.New("store away") }); err == nil {
		t.Error("a failed snapshot was not said")
	}
}
