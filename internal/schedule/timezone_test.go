package schedule

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTimezoneTable checks the tables against the reference's appendix: 483
// sorted, distinct names; 113 aliases, each mapping to a listed name and none
// listed itself.
func TestTimezoneTable(t *testing.T) {
	if n := len(timezoneNames); n != 483 {
		t.Errorf("%d names, want 483", n)
	}
	if !slices.IsSorted(Timezones()) {
		t.Errorf("Timezones() is not sorted")
	}
	if n := len(timezoneSet); n != len(timezoneNames) {
		t.Errorf("%d distinct names of %d", n, len(timezoneNames))
	}
	if n := len(legacyTimezones); n != 113 {
		t.Errorf("%d aliases, want 113", n)
	}
	for alias, canonical := range legacyTimezones {
		if _, ok := timezoneSet[canonical]; !ok {
			t.Errorf("alias %s maps to %s, which is not listed", alias, canonical)
		}
		if _, ok := timezoneSet[alias]; ok {
			t.Errorf("alias %s is also listed as a name", alias)
		}
	}
}

// TestEveryTimezoneLoads loads every listed name with time.LoadLocation and
// every name and alias with LoadLocation.
func TestEveryTimezoneLoads(t *testing.T) {
	for _, name := range timezoneNames {
		if _, err := time.LoadLocation(name); err != nil {
			t.Errorf("time.LoadLocation(%q): %v", name, err)
		}
		loc, err := LoadLocation(name)
		if err != nil {
			t.Errorf("LoadLocation(%q): %v", name, err)
			continue
		}
		if loc.String() != name {
			t.Errorf("LoadLocation(%q) is %q", name, loc)
		}
	}
	for alias, canonical := range legacyTimezones {
		loc, err := LoadLocation(alias)
		if err != nil {
			t.Errorf("LoadLocation(%q): %v", alias, err)
			continue
		}
		if loc.String() != canonical {
			t.Errorf("LoadLocation(%q) is %q, want %q", alias, loc, canonical)
		}
	}
}

func TestCanonicalTimezone(t *testing.T) {
	tests := []struct {
		name, want string // want "" means invalid
	}{
		{"UTC", "UTC"},
		{"GMT", "GMT"},
		{"Europe/Riga", "Europe/Riga"},
		{"Etc/GMT+5", "Etc/GMT+5"},
		{"America/Argentina/Buenos_Aires", "America/Argentina/Buenos_Aires"},
		// Legacy aliases the reference rewrites (its tests and validator).
		{"Europe/Kiev", "Europe/Kyiv"},
		{"UCT", "Etc/UTC"},
		{"CET", "Europe/Brussels"},
		{"US/Eastern", "America/New_York"},
		{"Asia/Calcutta", "Asia/Kolkata"},
		{"Zulu", "Etc/UTC"},
		{"GMT+0", "Etc/GMT"},
		// Invalid: case matters, no trimming, and names only Go knows.
		{"utc", ""},
		{"europe/riga", ""},
		{" UTC", ""},
		{"UTC ", ""},
		{"", ""},
		{"Local", ""},
		{"Mars/Olympus_Mons", ""},
		{"Etc/GMT+13", ""},
		{"US/Pacific-New", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CanonicalTimezone(tt.name)
			if tt.want != "" {
				if err != nil || got != tt.want {
					t.Errorf("CanonicalTimezone(%q) = %q, %v; want %q", tt.name, got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("CanonicalTimezone(%q) = %q, want an error", tt.name, got)
			}
			if want := `invalid timezone: "` + tt.name + `"`; err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
			if !errors.Is(err, ErrInvalidTimezone) {
				t.Errorf("error is not ErrInvalidTimezone")
			}
			var tzErr *TimezoneError
			if !errors.As(err, &tzErr) || tzErr.Name != tt.name {
				t.Errorf("error is not a *TimezoneError for %q", tt.name)
			}
			if _, err := LoadLocation(tt.name); !errors.Is(err, ErrInvalidTimezone) {
				t.Errorf("LoadLocation(%q) error = %v", tt.name, err)
			}
		})
	}
}

func TestLoadLocationCaches(t *testing.T) {
	a, err := LoadLocation("Europe/Kyiv")
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadLocation("Europe/Kiev")
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("an alias and its canonical name load different *time.Location values")
	}
	utc, err := LoadLocation("UTC")
	if err != nil || utc != time.UTC {
		t.Errorf("LoadLocation(UTC) = %v, %v; want time.UTC", utc, err)
	}
}

func TestLoadLocationError(t *testing.T) {
	cause := errors.New("no zone data")
	defer func(orig func(string) (*time.Location, error)) { loadZone = orig }(loadZone)
	loadZone = func(string) (*time.Location, error) { return nil, cause }
	locations.Delete("Europe/Vilnius")
	_, err := LoadLocation("Europe/Vilnius")
	if !errors.Is(err, cause) || !errors.Is(err, ErrInvalidTimezone) {
		t.Errorf("errors.Is fails on %v", err)
	}
	if want := `invalid timezone: "Europe/Vilnius": no zone data`; err == nil || err.Error() != want {
		t.Errorf("message %v, want %q", err, want)
	}
}

func TestTimezonesAreCopies(t *testing.T) {
	names := Timezones()
	if len(names) != 483 || len(slices.Compact(slices.Clone(names))) != 483 {
		t.Fatalf("Timezones() = %d names", len(names))
	}
	names[0] = "Mars/Olympus_Mons"
	if Timezones()[0] == "Mars/Olympus_Mons" {
		t.Errorf("Timezones() shares its backing array")
	}
	legacy := LegacyTimezones()
	if len(legacy) != 113 || legacy["US/Eastern"] != "America/New_York" {
		t.Fatalf("LegacyTimezones() = %d aliases", len(legacy))
	}
	legacy["US/Eastern"] = "UTC"
	if LegacyTimezones()["US/Eastern"] != "America/New_York" {
		t.Errorf("LegacyTimezones() shares its map")
	}
}

// TestCRDTimezoneRuleMatches checks that the Check CRD's tz rule, generated
// into api/v1alpha1, accepts exactly the listed names and aliases.
func TestCRDTimezoneRuleMatches(t *testing.T) {
	// The generated file is committed (`make generate` writes it): missing
	// or changed, the CRD's rule is not what this test can vouch for.
	src, err := os.ReadFile(filepath.Join("..", "..", "api", "v1alpha1", "zz_generated.timezone.go"))
	if err != nil {
		t.Fatalf("no generated rule to compare: %v; run `make generate`", err)
	}
	rule := regexp.MustCompile(`self in \[([^\]]*)\]`).FindSubmatch(src)
	if rule == nil {
		t.Fatal("the generated file has no `self in [...]` rule; run `make generate`")
	}
	var crd []string
	for _, q := range strings.Split(string(rule[1]), ",") {
		crd = append(crd, strings.Trim(q, "'"))
	}
	want := Timezones()
	for alias := range legacyTimezones {
		want = append(want, alias)
	}
	slices.Sort(crd)
	slices.Sort(want)
	if !slices.Equal(crd, want) {
		t.Errorf("the CRD accepts %d names, the schedule package %d; run `make generate`", len(crd), len(want))
	}
}

func TestKindOf(t *testing.T) {
	tests := []struct {
		expr string
		want Kind
	}{
		{"* * * * *", KindCron},
		{"0 * * * *", KindCron},
		{"  0 10 * * *  ", KindCron},
		{"0\t10 * *  MON-FRI", KindCron},
		{"\n0 10 * * *\n", KindCron},                 // trimmed first
		{"0 10 * * *\r\n", KindCron},                 // \r\n trails: trimmed
		{"0\x1c10\x1d*\x1e*\x1f*", KindCron},         // Python also splits on U+001C..U+001F
		{"0\u00a010\u2003*\u3000*\u0085*", KindCron}, // and on Unicode spaces
		{"0 10\n* * *", KindOnCalendar},              // five fields over two lines
		{"* * * * * *", KindOnCalendar},              // six fields
		{"* * * *", KindOnCalendar},
		{"", KindOnCalendar},
		{"   ", KindOnCalendar},
		{"daily", KindOnCalendar},
		{"12:34", KindOnCalendar},
		{"Mon..Fri *-*-* 09:00:00", KindOnCalendar},
		{"@daily", KindOnCalendar},
		{"0\u200b10 * * *", KindOnCalendar}, // a zero-width space is not whitespace
	}
	for _, tt := range tests {
		if got := KindOf(tt.expr); got != tt.want {
			t.Errorf("KindOf(%q) = %s, want %s", tt.expr, got, tt.want)
		}
	}
}
