package schedule

import (
	"slices"
	"sync"
	"time"

	// The zone database, embedded so that zones load where the image has no
	// /usr/share/zoneinfo (distroless). time.LoadLocation still prefers the
	// system's copy when there is one.
	_ "time/tzdata"
)

// timezoneSet holds timezoneNames for lookups.
var timezoneSet = func() map[string]struct{} {
	m := make(map[string]struct{}, len(timezoneNames))
	for _, n := range timezoneNames {
		m[n] = struct{}{}
	}
	return m
}()

// CanonicalTimezone validates a time-zone name as the reference does: a
// legacy alias (such as US/Eastern or Europe/Kiev) is first rewritten to its
// canonical name, which must then be one of the 483 accepted names. Names are
// case-sensitive ("utc" is invalid), and names only Go accepts, such as
// "Local", are invalid. The error is a *TimezoneError
// (`invalid timezone: "<name>"`).
func CanonicalTimezone(name string) (string, error) {
	canonical, ok := legacyTimezones[name]
	if !ok {
		canonical = name
	}
	if _, ok := timezoneSet[canonical]; !ok {
		return "", &TimezoneError{Name: name}
	}
	return canonical, nil
}

// loadZone loads a zone; tests replace it.
var loadZone = time.LoadLocation

// locations caches loaded zones by canonical name.
var locations sync.Map // string → *time.Location

// LoadLocation validates a time-zone name with CanonicalTimezone and loads the
// canonical zone. Zones are loaded once and cached.
func LoadLocation(name string) (*time.Location, error) {
	canonical, err := CanonicalTimezone(name)
	if err != nil {
		return nil, err
	}
	if loc, ok := locations.Load(canonical); ok {
		return loc.(*time.Location), nil
	}
	loc, err := loadZone(canonical)
	if err != nil {
		return nil, &TimezoneError{Name: name, Err: err}
	}
	actual, _ := locations.LoadOrStore(canonical, loc)
	return actual.(*time.Location), nil
}

// Timezones returns the 483 accepted time-zone names, sorted. It is a copy,
// for generators (such as the Check CRD's tz rule) and documentation.
func Timezones() []string {
	names := append([]string(nil), timezoneNames[:]...)
	slices.Sort(names)
	return names
}

// LegacyTimezones returns the 113 legacy aliases and the canonical name each
// is rewritten to. It is a copy.
func LegacyTimezones() map[string]string {
	m := make(map[string]string, len(legacyTimezones))
	for k, v := range legacyTimezones {
		m[k] = v
	}
	return m
}
