package checkinput

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/schedule"
)

const prefix = "json validation error: "

func validate(t *testing.T, body string, forCreate bool) (*Input, error) {
	t.Helper()
	o, err := ParseBody([]byte(body))
	if err != nil {
		return nil, err
	}
	return Validate(o, forCreate)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// jsonStr is a JSON string of n copies of s.
func jsonStr(s string, n int) string { return `"` + strings.Repeat(s, n) + `"` }

func TestParseBody(t *testing.T) {
	for _, tt := range []struct{ body, err string }{
		{"", ""}, // an empty body is {}
		{"{}", ""},
		{" {\"a\": 1}\r\n", ""},
		{`{"a": {"b": [1, 2.5, null, "x"]}}`, ""},
		{"   ", "could not parse request body"}, // not empty, and not JSON
		{"{", "could not parse request body"},
		{`{"a": 1} x`, "could not parse request body"},
		{`{"a": 1}{}`, "could not parse request body"},
		{"api_key=x&name=y", "could not parse request body"},
		{"\xef\xbb\xbf{}", "could not parse request body"},               // a BOM
		{"{\"name\": \"\xff\"}", "could not parse request body"},         // invalid UTF-8
		{"{\"name\": \"\xed\xa0\x80\"}", "could not parse request body"}, // an encoded surrogate
		{`{'a': 1}`, "could not parse request body"},
		{`{"timeout": NaN}`, "could not parse request body"}, // Python accepts it; docs/api.md
		{`{"timeout": Infinity}`, "could not parse request body"},
		{"123", prefix + "value is not an object"},
		{"null", prefix + "value is not an object"},
		{"true", prefix + "value is not an object"},
		{`"{}"`, prefix + "value is not an object"},
		{" [] ", prefix + "value is not an object"},
		{`[{"name": "x"}]`, prefix + "value is not an object"},
	} {
		_, err := ParseBody([]byte(tt.body))
		if got := errText(err); got != tt.err {
			t.Errorf("ParseBody(%q): %q, want %q", tt.body, got, tt.err)
		}
	}
}

func TestAPIKey(t *testing.T) {
	for _, tt := range []struct {
		body string
		key  string
		ok   bool
	}{
		{`{}`, "", false},
		{`{"api_key": "abc"}`, "abc", true},
		{`{"api_key": ""}`, "", true},
		{`{"api_key": "a", "api_key": "b"}`, "b", true}, // duplicate keys: the last wins
		{`{"api_key": 5}`, "", false},
		{`{"api_key": null}`, "", false},
		{`{"api_key": ["x"]}`, "", false},
		{`{"api_\u006bey": "esc"}`, "esc", true},
	} {
		o, err := ParseBody([]byte(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		if key, ok := o.APIKey(); key != tt.key || ok != tt.ok {
			t.Errorf("%s: APIKey() = %q, %v; want %q, %v", tt.body, key, ok, tt.key, tt.ok)
		}
	}
}

// TestValidateRejects covers every row of the reference's schema table
// (reference 4.5), each message exactly, at the limits.
func TestValidateRejects(t *testing.T) {
	tests := []struct{ body, err string }{
		{`{"channels": 1}`, "channels is not a string"},
		{`{"channels": ["a"]}`, "channels is not a string"},
		{`{"desc": 1}`, "desc is not a string"},
		{`{"desc": {}}`, "desc is not a string"},

		{`{"failure_kw": []}`, "failure_kw is not a string"},
		{`{"failure_kw": ` + jsonStr("é", 201) + `}`, "failure_kw is too long"},
		{`{"start_kw": false}`, "start_kw is not a string"},
		{`{"start_kw": ` + jsonStr("a", 201) + `}`, "start_kw is too long"},
		{`{"success_kw": 1.5}`, "success_kw is not a string"},
		{`{"success_kw": ` + jsonStr("😀", 201) + `}`, "success_kw is too long"},
		{`{"subject": 0}`, "subject is not a string"},
		{`{"subject": ` + jsonStr("a", 201) + `}`, "subject is too long"},
		{`{"subject_fail": true}`, "subject_fail is not a string"},
		{`{"subject_fail": ` + jsonStr(`\u00e9`, 201) + `}`, "subject_fail is too long"},

		{`{"filter_subject": 0}`, "filter_subject is not a boolean"},
		{`{"filter_body": "true"}`, "filter_body is not a boolean"},
		{`{"filter_http_body": 1}`, "filter_http_body is not a boolean"},
		{`{"filter_default_fail": []}`, "filter_default_fail is not a boolean"},
		{`{"manual_resume": "false"}`, "manual_resume is not a boolean"},

		{`{"grace": 59}`, "grace is too small"},
		{`{"grace": 31536001}`, "grace is too large"},
		{`{"grace": "60"}`, "grace is not a number"},
		{`{"grace": 3600.0}`, "grace is not a number"},
		{`{"grace": false}`, "grace is too small"}, // a bool is an int 0
		{`{"timeout": 59}`, "timeout is too small"},
		{`{"timeout": 31536001}`, "timeout is too large"},
		{`{"timeout": 3600.0}`, "timeout is not a number"},
		{`{"timeout": 1e4}`, "timeout is not a number"},
		{`{"timeout": 1E4}`, "timeout is not a number"},
		{`{"timeout": -1.5}`, "timeout is not a number"},
		{`{"timeout": "3600"}`, "timeout is not a number"},
		{`{"timeout": [3600]}`, "timeout is not a number"},
		{`{"timeout": {}}`, "timeout is not a number"},
		{`{"timeout": true}`, "timeout is too small"}, // a bool is an int 1
		{`{"timeout": 0}`, "timeout is too small"},
		{`{"timeout": -0}`, "timeout is too small"},
		{`{"timeout": -100}`, "timeout is too small"},
		{`{"timeout": -100000000000000000000000}`, "timeout is too small"},
		{`{"timeout": 999999999}`, "timeout is too large"},
		{`{"timeout": 1000000000}`, "timeout is too large"},
		{`{"timeout": 86400000000000000000000}`, "timeout is too large"}, // the reference answers 500

		{`{"methods": "post"}`, "methods has unexpected value"},
		{`{"methods": "GET"}`, "methods has unexpected value"},
		{`{"methods": " POST"}`, "methods has unexpected value"},
		{`{"methods": 1}`, "methods has unexpected value"},
		{`{"methods": ["POST"]}`, "methods has unexpected value"},

		{`{"name": 5}`, "name is not a string"},
		{`{"name": ` + jsonStr("😀", 101) + `}`, "name is too long"},

		{`{"schedule": 5}`, "schedule is not a string"},
		{`{"schedule": "` + strings.Repeat(" ", 92) + `0 * * * *"}`, "schedule is too long"},
		{`{"schedule": ""}`, "schedule is not a valid cron or OnCalendar expression"},
		{`{"schedule": "  "}`, "schedule is not a valid cron or OnCalendar expression"},
		{`{"schedule": "* * * * * *"}`, "schedule is not a valid cron or OnCalendar expression"},
		{`{"schedule": "@daily"}`, "schedule is not a valid cron or OnCalendar expression"},
		{`{"schedule": "0 0 30 2 *"}`, "schedule is not a valid cron or OnCalendar expression"},
		{`{"schedule": "60 * * * *"}`, "schedule is not a valid cron or OnCalendar expression"},
		{`{"schedule": "not a schedule"}`, "schedule is not a valid cron or OnCalendar expression"},

		{`{"slug": 1}`, "slug is not a string"},
		{`{"slug": "Abc"}`, "slug does not match pattern"},
		{`{"slug": "a b"}`, "slug does not match pattern"},
		{`{"slug": "a.b"}`, "slug does not match pattern"},
		{`{"slug": "abc\n"}`, "slug does not match pattern"},
		{`{"slug": "é"}`, "slug does not match pattern"},
		{`{"slug": ` + jsonStr("a", 101) + `}`, "slug is too long"},
		{`{"slug": ` + jsonStr("A", 101) + `}`, "slug is too long"}, // length before pattern

		{`{"tags": ["a"]}`, "tags is not a string"},
		{`{"tags": ` + jsonStr("t ", 251) + `}`, "tags is too long"},
		{`{"desc": ` + jsonStr("x", 10001) + `}`, "desc is too long"},

		{`{"tz": 1}`, "tz is not a string"},
		{`{"tz": "utc"}`, "tz is not a valid timezone"},
		{`{"tz": "Local"}`, "tz is not a valid timezone"},
		{`{"tz": ""}`, "tz is not a valid timezone"},
		{`{"tz": "UTC "}`, "tz is not a valid timezone"},
		{`{"tz": "Europe/Nowhere"}`, "tz is not a valid timezone"},

		{`{"unique": "name"}`, "unique is not an array"},
		{`{"unique": {"name": 1}}`, "unique is not an array"},
		{`{"unique": ["uuid"]}`, "an item in 'unique' has unexpected value"},
		{`{"unique": ["Name"]}`, "an item in 'unique' has unexpected value"},
		{`{"unique": ["name", "schedule"]}`, "an item in 'unique' has unexpected value"},
		{`{"unique": [1]}`, "an item in 'unique' has unexpected value"},
		{`{"unique": [null]}`, "an item in 'unique' has unexpected value"},
		{`{"unique": [["name"]]}`, "an item in 'unique' has unexpected value"},
	}
	for _, tt := range tests {
		for _, forCreate := range []bool{true, false} {
			_, err := validate(t, tt.body, forCreate)
			if got, want := errText(err), prefix+tt.err; got != want {
				t.Errorf("%.100s (create %v): %q, want %q", tt.body, forCreate, got, want)
			}
		}
	}
}

// nullMessages is the message of a top-level null for each field: the
// reference replaces nulls with a float before it checks types.
var nullMessages = map[string]string{
	"channels": "channels is not a string", "desc": "desc is not a string",
	"failure_kw": "failure_kw is not a string", "filter_subject": "filter_subject is not a boolean",
	"filter_body": "filter_body is not a boolean", "filter_http_body": "filter_http_body is not a boolean",
	"filter_default_fail": "filter_default_fail is not a boolean", "grace": "grace is not a number",
	"manual_resume": "manual_resume is not a boolean", "methods": "methods has unexpected value",
	"name": "name is not a string", "schedule": "schedule is not a string", "slug": "slug is not a string",
	"start_kw": "start_kw is not a string", "subject": "subject is not a string",
	"subject_fail": "subject_fail is not a string", "success_kw": "success_kw is not a string",
	"tags": "tags is not a string", "timeout": "timeout is not a number", "tz": "tz is not a string",
	"unique": "unique is not an array",
}

func TestValidateNull(t *testing.T) {
	if len(nullMessages) != len(fieldOrder) {
		t.Fatalf("%d null messages for %d fields", len(nullMessages), len(fieldOrder))
	}
	for _, f := range fieldOrder {
		_, err := validate(t, `{"`+f+`": null}`, true)
		if got, want := errText(err), prefix+nullMessages[f]; got != want {
			t.Errorf("%s: null: %q, want %q", f, got, want)
		}
	}
}

// TestValidateOrder checks that of two invalid fields the one the
// reference declares first is reported, for every pair of fields and
// whatever their order in the body.
func TestValidateOrder(t *testing.T) {
	for i, first := range fieldOrder {
		for _, second := range fieldOrder[i+1:] {
			for _, body := range []string{
				`{"` + first + `": null, "` + second + `": null}`,
				`{"` + second + `": null, "` + first + `": null}`,
			} {
				_, err := validate(t, body, true)
				if got, want := errText(err), prefix+nullMessages[first]; got != want {
					t.Errorf("%s: %q, want %q", body, got, want)
				}
			}
		}
	}
	// The reference's own example, and a value error before a type error.
	for body, want := range map[string]string{
		`{"timeout": 1, "name": 5}`:         "name is not a string",
		`{"tz": "x", "timeout": 1}`:         "timeout is too small",
		`{"unique": ["x"], "tz": "x"}`:      "tz is not a valid timezone",
		`{"slug": "A", "schedule": "nope"}`: "schedule is not a valid cron or OnCalendar expression",
	} {
		_, err := validate(t, body, true)
		if got := errText(err); got != prefix+want {
			t.Errorf("%s: %q, want %q", body, got, prefix+want)
		}
	}
}

// TestValidateLengths checks every bounded string at its limit and one
// character over it. Characters are code points, as in the reference: an
// emoji (four bytes in UTF-8, a surrogate pair as a JSON escape) or an
// escaped "é" counts as one.
func TestValidateLengths(t *testing.T) {
	sched := func(n int) string { return `"` + strings.Repeat(" ", n-9) + `0 * * * *"` }
	emoji := func(n int) string { return jsonStr("😀", n) }
	for _, tt := range []struct {
		field string
		limit int
		value func(n int) string // a JSON value of n characters
	}{
		{"desc", 10000, emoji},
		{"desc", 10000, func(n int) string { return jsonStr(`\ud83d\ude00`, n) }},
		{"failure_kw", 200, emoji},
		{"name", 100, emoji},
		{"name", 100, func(n int) string { return jsonStr(`\u00e9`, n) }},
		{"schedule", 100, sched},
		{"slug", 100, func(n int) string { return jsonStr("a", n) }},
		{"start_kw", 200, emoji},
		{"subject", 200, emoji},
		{"subject_fail", 200, emoji},
		{"success_kw", 200, emoji},
		{"tags", 500, emoji},
	} {
		at := `{"` + tt.field + `": ` + tt.value(tt.limit) + `}`
		if _, err := validate(t, at, true); err != nil {
			t.Errorf("%s at %d characters: %v", tt.field, tt.limit, err)
		}
		over := `{"` + tt.field + `": ` + tt.value(tt.limit+1) + `}`
		_, err := validate(t, over, true)
		if got, want := errText(err), prefix+tt.field+" is too long"; got != want {
			t.Errorf("%s at %d characters: %q, want %q", tt.field, tt.limit+1, got, want)
		}
	}
}

// TestValidateAccepts checks the limits from the accepting side and the
// values Validate hands on.
func TestValidateAccepts(t *testing.T) {
	for _, body := range []string{
		`{}`,
		`{"name": ` + jsonStr("😀", 100) + `}`,
		`{"name": ""}`,
		`{"failure_kw": ` + jsonStr("é", 200) + `, "start_kw": ` + jsonStr("a", 200) + `, "success_kw": ` + jsonStr("b", 200) +
			`, "subject": ` + jsonStr("c", 200) + `, "subject_fail": ` + jsonStr("d", 200) + `}`,
		`{"desc": ` + jsonStr("x", 10000) + `, "tags": ` + jsonStr("t ", 250) + `}`,
		`{"slug": ` + jsonStr("a", 100) + `}`,
		`{"slug": ""}`,
		`{"slug": "a-b_c-09"}`,
		`{"timeout": 60, "grace": 31536000}`,
		`{"timeout": 31536000, "grace": 60}`,
		`{"methods": ""}`,
		`{"methods": "POST"}`,
		`{"schedule": "` + strings.Repeat(" ", 91) + `0 * * * *"}`,
		`{"schedule": "0 3 * * MON-FRI"}`,
		`{"schedule": "daily"}`,
		`{"schedule": "12:34"}`,
		`{"schedule": "Mon..Fri 09:00\n*-*~1 12:00"}`,
		`{"schedule": "12:34 Europe/Riga"}`,
		`{"tz": "UTC"}`,
		`{"tz": "Etc/GMT+1"}`,
		`{"filter_subject": true, "filter_body": false, "filter_http_body": true, "filter_default_fail": false, "manual_resume": true}`,
		`{"unique": []}`,
		`{"unique": ["name", "slug", "tags", "timeout", "grace", "name"]}`,
		`{"channels": ""}`,
		`{"channels": ",,, not checked here"}`,
		`{"api_key": 5, "unknown": {"x": [null]}, "id": null, "kind": "cron"}`,
	} {
		if _, err := validate(t, body, true); err != nil {
			t.Errorf("%.80s: %v", body, err)
		}
	}

	in, err := validate(t, `{"name": "n", "timeout": false, "timeout": 120, "tz": "Europe/Kiev", "unique": ["name", "name"]}`, true)
	if err != nil {
		t.Fatal(err)
	}
	if *in.Name != "n" || *in.Timeout != 120 || len(in.Unique) != 2 {
		t.Errorf("input %+v", in)
	}
	// Legacy zone names are rewritten before they are stored.
	for legacy, canonical := range map[string]string{"Europe/Kiev": "Europe/Kyiv", "UCT": "Etc/UTC", "CET": "Europe/Brussels",
		"US/Eastern": "America/New_York", "Asia/Calcutta": "Asia/Kolkata", "Europe/Riga": "Europe/Riga"} {
		in, err := validate(t, `{"tz": "`+legacy+`"}`, true)
		if err != nil || *in.TZ != canonical {
			t.Errorf("tz %s: %v %v, want %s", legacy, in, err, canonical)
		}
	}
}

// TestCreateAndUpdate covers what differs between a create and an update:
// a create starts from the defaults and may upsert, an update changes only
// what the request names and never upserts.
func TestCreateAndUpdate(t *testing.T) {
	in, err := validate(t, `{"name": "n", "unique": ["name"]}`, false)
	if err != nil {
		t.Fatal(err)
	}
	if in.Unique != nil || in.UniqueLookup() {
		t.Errorf("an update does not upsert: %v", in.Unique)
	}
	if _, err := validate(t, `{"unique": 1}`, false); errText(err) != prefix+"unique is not an array" {
		t.Errorf("an update validates unique as the reference: %v", err)
	}

	// A create from {} is exactly the defaults, the CRD's and the reference's.
	in, _ = validate(t, `{}`, true)
	spec := v1.DefaultCheckSpec()
	in.Apply(&spec, 3)
	timeout := int64(86400)
	if want := (v1.CheckSpec{Timeout: &timeout, Grace: 3600, TZ: "UTC"}); !reflect.DeepEqual(spec, want) {
		t.Errorf("created from {}: %+v", spec)
	}
	// v3 never derives the slug from the name.
	in, _ = validate(t, `{"name": "Nightly Backup"}`, true)
	spec = v1.DefaultCheckSpec()
	in.Apply(&spec, 3)
	if spec.Name != "Nightly Backup" || spec.Slug != "" {
		t.Errorf("v3 create: name %q slug %q", spec.Name, spec.Slug)
	}

	// An update with every field empty of meaning changes nothing.
	sched := "0 3 * * *"
	stored := v1.CheckSpec{Name: "a", Slug: "a", Tags: "x  y", Desc: "d", Schedule: &sched, Grace: 120, TZ: "Europe/Riga",
		ManualResume: true, Methods: "POST", StartKeywords: "s", SuccessKeywords: "ok", FailureKeywords: "bad",
		FilterSubject: true, FilterBody: true, FilterHTTPBody: true, FilterDefaultFail: true, Channels: []string{"ops"}}
	for _, body := range []string{`{}`, `{"api_key": "x", "unknown": 1}`, `{"channels": "*"}`} {
		in, err := validate(t, body, false)
		if err != nil {
			t.Fatal(err)
		}
		spec := *stored.DeepCopy()
		in.Apply(&spec, 3)
		if !reflect.DeepEqual(spec, stored) {
			t.Errorf("update %s changed the spec: %+v", body, spec)
		}
	}
}

func TestApply(t *testing.T) {
	str := func(s string) *string { return &s }
	i64 := func(v int64) *int64 { return &v }
	tests := []struct {
		name    string
		start   v1.CheckSpec
		body    string
		version int
		check   func(t *testing.T, s v1.CheckSpec)
	}{
		{"schedule makes a cron check and clears the timeout", v1.DefaultCheckSpec(), `{"schedule": "0 * * * *"}`, 3, func(t *testing.T, s v1.CheckSpec) {
			if s.Timeout != nil || s.Schedule == nil || *s.Schedule != "0 * * * *" || s.TZ != "UTC" {
				t.Errorf("%+v", s)
			}
		}},
		{"an update through the API leaves the alert policy as kubectl set it", func() v1.CheckSpec {
			s := v1.DefaultCheckSpec()
			s.AlertPolicy = v1.AlertPolicy{FailureThreshold: 3, RecoveryThreshold: 2,
				MaxRuntime: &metav1.Duration{Duration: time.Hour}, MinRuntime: &metav1.Duration{Duration: time.Minute}}
			return s
		}(), `{"name": "renamed", "timeout": 600, "grace": 120, "channels": ""}`, 3, func(t *testing.T, s v1.CheckSpec) {
			p := s.AlertPolicy
			if p.FailureThreshold != 3 || p.RecoveryThreshold != 2 || p.MaxRuntime == nil || p.MaxRuntime.Duration != time.Hour ||
				p.MinRuntime == nil || p.MinRuntime.Duration != time.Minute || s.Name != "renamed" {
				t.Errorf("%+v", s)
			}
		}},
		{"schedule wins over timeout", v1.DefaultCheckSpec(), `{"timeout": 60, "schedule": "0 * * * *"}`, 3, func(t *testing.T, s v1.CheckSpec) {
			if s.Timeout != nil || s.Schedule == nil || *s.Schedule != "0 * * * *" {
				t.Errorf("%+v", s)
			}
		}},
		{"schedule wins over timeout on update", v1.CheckSpec{Timeout: i64(600), Grace: 60}, `{"schedule": "daily", "timeout": 60}`, 3, func(t *testing.T, s v1.CheckSpec) {
			if s.Timeout != nil || *s.Schedule != "daily" {
				t.Errorf("%+v", s)
			}
		}},
		{"schedule stored verbatim", v1.DefaultCheckSpec(), `{"schedule": " 0 * * * * "}`, 3, func(t *testing.T, s v1.CheckSpec) {
			if *s.Schedule != " 0 * * * * " {
				t.Errorf("%q", *s.Schedule)
			}
		}},
		{"timeout makes a cron check simple", v1.CheckSpec{Schedule: str("0 * * * *"), Grace: 60, TZ: "Europe/Riga"}, `{"timeout": 3600}`, 3, func(t *testing.T, s v1.CheckSpec) {
			if s.Schedule != nil || *s.Timeout != 3600 || s.Grace != 60 || s.TZ != "Europe/Riga" {
				t.Errorf("%+v", s)
			}
		}},
		{"grace and tz alone keep the kind", v1.CheckSpec{Schedule: str("0 * * * *"), Grace: 60}, `{"grace": 120, "tz": "Asia/Tokyo"}`, 3, func(t *testing.T, s v1.CheckSpec) {
			if s.Schedule == nil || s.Timeout != nil || s.Grace != 120 || s.TZ != "Asia/Tokyo" {
				t.Errorf("%+v", s)
			}
		}},
		{"tz on a simple check is stored", v1.DefaultCheckSpec(), `{"tz": "US/Pacific"}`, 3, func(t *testing.T, s v1.CheckSpec) {
			if s.Schedule != nil || *s.Timeout != 86400 || s.TZ != "America/Los_Angeles" {
				t.Errorf("%+v", s)
			}
		}},
		{"omitted fields unchanged", v1.CheckSpec{Name: "a", Tags: "x y", Timeout: i64(60), Grace: 60}, `{"desc": "d"}`, 3, func(t *testing.T, s v1.CheckSpec) {
			if s.Name != "a" || s.Tags != "x y" || *s.Timeout != 60 || s.Desc != "d" {
				t.Errorf("%+v", s)
			}
		}},
		{"tags verbatim", v1.DefaultCheckSpec(), `{"tags": " prod  db "}`, 3, func(t *testing.T, s v1.CheckSpec) {
			if s.Tags != " prod  db " {
				t.Errorf("%q", s.Tags)
			}
		}},
		{"v3 name leaves the slug", v1.CheckSpec{Slug: "keep"}, `{"name": "Foo Bar"}`, 3, func(t *testing.T, s v1.CheckSpec) {
			if s.Slug != "keep" {
				t.Errorf("slug %q", s.Slug)
			}
		}},
		{"v2 name sets the slug", v1.CheckSpec{Slug: "keep"}, `{"name": "Foo Bar!"}`, 2, func(t *testing.T, s v1.CheckSpec) {
			if s.Slug != "foo-bar" {
				t.Errorf("slug %q", s.Slug)
			}
		}},
		{"v1 name sets the slug", v1.CheckSpec{}, `{"name": "Āzis Backup"}`, 1, func(t *testing.T, s v1.CheckSpec) {
			if s.Slug != "azis-backup" {
				t.Errorf("slug %q", s.Slug)
			}
		}},
		{"v2 slug of a name that expands is cut to the limit", v1.CheckSpec{}, `{"name": "a` + strings.Repeat("\u3371", 99) + `"}`, 2, func(t *testing.T, s v1.CheckSpec) {
			if want := "a" + strings.Repeat("hpa", 33); s.Slug != want {
				t.Errorf("slug %q, want %q", s.Slug, want)
			}
		}},
		{"v1 explicit slug wins", v1.CheckSpec{}, `{"slug": "x", "name": "Foo Bar"}`, 1, func(t *testing.T, s v1.CheckSpec) {
			if s.Slug != "x" {
				t.Errorf("slug %q", s.Slug)
			}
		}},
		{"v2 without name keeps the slug", v1.CheckSpec{Name: "Old", Slug: "keep"}, `{"desc": "x"}`, 2, func(t *testing.T, s v1.CheckSpec) {
			if s.Slug != "keep" {
				t.Errorf("slug %q", s.Slug)
			}
		}},
		{"everything else", v1.CheckSpec{}, `{"tags": "a b", "manual_resume": true, "methods": "POST", "tz": "US/Eastern", "start_kw": "s", "failure_kw": "f",
			"filter_body": true, "filter_http_body": true, "filter_default_fail": true, "grace": 120, "desc": "d"}`, 3, func(t *testing.T, s v1.CheckSpec) {
			if s.Tags != "a b" || !s.ManualResume || s.Methods != "POST" || s.TZ != "America/New_York" || s.StartKeywords != "s" ||
				s.FailureKeywords != "f" || !s.FilterBody || !s.FilterHTTPBody || !s.FilterDefaultFail || s.Grace != 120 || s.Desc != "d" {
				t.Errorf("%+v", s)
			}
		}},
		{"false and empty values are applied", v1.CheckSpec{Tags: "a", Desc: "d", ManualResume: true, Methods: "POST", FilterBody: true},
			`{"tags": "", "desc": "", "manual_resume": false, "methods": "", "filter_body": false}`, 3, func(t *testing.T, s v1.CheckSpec) {
				if s.Tags != "" || s.Desc != "" || s.ManualResume || s.Methods != "" || s.FilterBody {
					t.Errorf("%+v", s)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := validate(t, tt.body, false)
			if err != nil {
				t.Fatal(err)
			}
			s := *tt.start.DeepCopy()
			in.Apply(&s, tt.version)
			tt.check(t, s)
		})
	}
}

// TestSubjectMapping covers the deprecated subject fields both ways
// (reference 4.8): in, they set keywords and the subject filter; out, they
// show the keywords only while the subject filter is on.
func TestSubjectMapping(t *testing.T) {
	tests := []struct {
		start                      v1.CheckSpec
		body                       string
		success, failure           string
		filter                     bool
		subjectOut, subjectFailOut string
	}{
		{v1.CheckSpec{}, `{"subject": "SUCCESS"}`, "SUCCESS", "", true, "SUCCESS", ""},
		{v1.CheckSpec{}, `{"subject_fail": "FAIL"}`, "", "FAIL", true, "", "FAIL"},
		{v1.CheckSpec{}, `{"subject": "S", "subject_fail": "F"}`, "S", "F", true, "S", "F"},
		// Explicit keywords and flag are applied after, and win.
		{v1.CheckSpec{}, `{"subject": "SUCCESS", "filter_subject": false}`, "SUCCESS", "", false, "", ""},
		{v1.CheckSpec{}, `{"subject": "A", "success_kw": "B"}`, "B", "", true, "B", ""},
		{v1.CheckSpec{}, `{"subject_fail": "A", "failure_kw": ""}`, "", "", true, "", ""},
		// An empty subject clears success_kw; the flag follows what is left.
		{v1.CheckSpec{SuccessKeywords: "x", FilterSubject: true}, `{"subject": ""}`, "", "", false, "", ""},
		{v1.CheckSpec{SuccessKeywords: "x", FailureKeywords: "f", FilterSubject: true}, `{"subject": ""}`, "", "f", true, "", "f"},
		{v1.CheckSpec{SuccessKeywords: "x"}, `{"subject_fail": ""}`, "x", "", true, "x", ""},
		// Keywords without the filter are not shown as subjects.
		{v1.CheckSpec{}, `{"success_kw": "ok", "failure_kw": "bad"}`, "ok", "bad", false, "", ""},
		{v1.CheckSpec{}, `{"success_kw": "ok", "filter_subject": true}`, "ok", "", true, "ok", ""},
	}
	for _, tt := range tests {
		in, err := validate(t, tt.body, false)
		if err != nil {
			t.Fatal(err)
		}
		s := tt.start
		in.Apply(&s, 3)
		if s.SuccessKeywords != tt.success || s.FailureKeywords != tt.failure || s.FilterSubject != tt.filter {
			t.Errorf("%s on %+v: success %q failure %q filter %v", tt.body, tt.start, s.SuccessKeywords, s.FailureKeywords, s.FilterSubject)
		}
		if subj, fail := SubjectFields(s); subj != tt.subjectOut || fail != tt.subjectFailOut {
			t.Errorf("%s: SubjectFields %q %q, want %q %q", tt.body, subj, fail, tt.subjectOut, tt.subjectFailOut)
		}
	}
}

func TestUnique(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	sched := "0 3 * * *"
	cronCheck := v1.CheckSpec{Name: "cron", Schedule: &sched, Grace: 3600}
	tests := []struct {
		body   string
		lookup bool
		spec   v1.CheckSpec
		match  bool
	}{
		{`{"name": "a"}`, false, v1.CheckSpec{Name: "a"}, false},
		{`{"name": "a", "unique": []}`, false, v1.CheckSpec{Name: "a"}, false},
		// A listed field the request leaves out: no lookup, a plain create.
		{`{"unique": ["name"]}`, false, v1.CheckSpec{}, false},
		{`{"name": "a", "unique": ["name", "slug"]}`, false, v1.CheckSpec{Name: "a"}, false},
		{`{"name": "a", "unique": ["tags"]}`, false, v1.CheckSpec{Name: "a"}, false},
		{`{"unique": ["timeout"]}`, false, v1.CheckSpec{}, false},
		{`{"unique": ["grace"]}`, false, v1.CheckSpec{}, false},
		{`{"name": "a", "unique": ["name"]}`, true, v1.CheckSpec{Name: "a"}, true},
		{`{"name": "a", "unique": ["name", "name"]}`, true, v1.CheckSpec{Name: "a"}, true},
		{`{"name": "a", "unique": ["name"]}`, true, v1.CheckSpec{Name: "A"}, false},
		{`{"name": "a", "unique": ["name"]}`, true, v1.CheckSpec{Name: "a "}, false},
		{`{"name": "", "unique": ["name"]}`, true, v1.CheckSpec{}, true},
		{`{"name": "a", "tags": "x", "unique": ["name", "tags"]}`, true, v1.CheckSpec{Name: "a", Tags: "x y"}, false},
		{`{"name": "a", "tags": "x y", "unique": ["name", "tags"]}`, true, v1.CheckSpec{Name: "a", Tags: "x y"}, true},
		{`{"slug": "s", "unique": ["slug"]}`, true, v1.CheckSpec{Slug: "s"}, true},
		{`{"slug": "s", "unique": ["slug"]}`, true, v1.CheckSpec{Slug: "t"}, false},
		{`{"timeout": 3600, "unique": ["timeout"]}`, true, v1.CheckSpec{Timeout: i64(3600)}, true},
		{`{"timeout": 3600, "unique": ["timeout"]}`, true, v1.CheckSpec{Timeout: i64(3601)}, false},
		{`{"timeout": 86400, "unique": ["timeout"]}`, true, v1.CheckSpec{}, true}, // unset timeout is the default
		{`{"timeout": 86400, "unique": ["timeout"]}`, true, cronCheck, true},      // a cron check has the default period
		{`{"timeout": 3600, "unique": ["timeout"]}`, true, cronCheck, false},
		{`{"grace": 3600, "slug": "s", "unique": ["grace", "slug"]}`, true, v1.CheckSpec{Grace: 3600, Slug: "s"}, true},
		{`{"grace": 3600, "unique": ["grace"]}`, true, v1.CheckSpec{}, true}, // not yet defaulted by the API server
		{`{"grace": 120, "unique": ["grace"]}`, true, v1.CheckSpec{Grace: 3600}, false},
		// The schedule is not a unique field: it does not take part.
		{`{"name": "cron", "schedule": "daily", "unique": ["name"]}`, true, cronCheck, true},
	}
	for _, tt := range tests {
		in, err := validate(t, tt.body, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := in.UniqueLookup(); got != tt.lookup {
			t.Errorf("%s: UniqueLookup %v, want %v", tt.body, got, tt.lookup)
		}
		if got := in.Matches(tt.spec); got != tt.match {
			t.Errorf("%s vs %+v: Matches %v, want %v", tt.body, tt.spec, got, tt.match)
		}
	}
}

func TestResolveChannels(t *testing.T) {
	refs := []ChannelRef{
		{Object: "ops", ID: "11111111-1111-4111-8111-111111111111", Name: "Ops"},
		{Object: "dev", ID: "22222222-2222-4222-8222-222222222222", Name: "Dev Team"},
		{Object: "dup1", ID: "33333333-3333-4333-8333-333333333333", Name: "Same"},
		{Object: "dup2", ID: "44444444-4444-4444-8444-444444444444", Name: "Same"},
		{Object: "uuidname", ID: "55555555-5555-4555-8555-555555555555", Name: "66666666-6666-4666-8666-666666666666"},
		{Object: "unnamed", ID: "77777777-7777-4777-8777-777777777777", Name: ""},
	}
	tests := []struct {
		value string
		want  []string
		err   string
	}{
		{"", []string{}, ""},
		// "*" is every channel that exists now (reference and contract).
		{"*", []string{"dev", "dup1", "dup2", "ops", "unnamed", "uuidname"}, ""},
		{"Ops", []string{"ops"}, ""},
		{"Dev Team,11111111-1111-4111-8111-111111111111,Ops", []string{"dev", "ops"}, ""},
		{"Ops,Ops", []string{"ops"}, ""},
		{"66666666-6666-4666-8666-666666666666", []string{"uuidname"}, ""}, // matched by name
		{"55555555-5555-4555-8555-555555555555", []string{"uuidname"}, ""},
		{"33333333-3333-4333-8333-333333333333", []string{"dup1"}, ""},
		{"77777777-7777-4777-8777-777777777777", []string{"unnamed"}, ""},
		{",", nil, "empty channel identifier"},
		{"Ops,", nil, "empty channel identifier"},
		{",nope", nil, "empty channel identifier"},
		{"Ops,,Dev Team", nil, "empty channel identifier"},
		{"nope,", nil, "invalid channel identifier: nope"}, // the first bad piece is reported
		{" Ops", nil, "invalid channel identifier:  Ops"},  // no trimming
		{"Ops ", nil, "invalid channel identifier: Ops "},
		{"ops", nil, "invalid channel identifier: ops"}, // object names are not identifiers
		{"11111111-1111-4111-8111-11111111111X", nil, "invalid channel identifier: 11111111-1111-4111-8111-11111111111X"},
		// UUIDs compare as the API prints them: lowercase.
		{"11111111-1111-4111-8111-AAAAAAAAAAAA", nil, "invalid channel identifier: 11111111-1111-4111-8111-AAAAAAAAAAAA"},
		{"*,Ops", nil, "invalid channel identifier: *"},
		{"Same", nil, "non-unique channel identifier: Same"},
		{"Ops,Same", nil, "non-unique channel identifier: Same"},
	}
	for _, tt := range tests {
		got, err := ResolveChannels(tt.value, refs)
		if tt.err != "" {
			var ce *ChannelError
			if errText(err) != tt.err || !errors.Is(err, ErrChannels) || !errors.As(err, &ce) || got != nil {
				t.Errorf("%q: %v %v, want %q", tt.value, got, err, tt.err)
			}
			if strings.HasPrefix(errText(err), prefix) {
				t.Errorf("%q: channel errors carry no schema prefix", tt.value)
			}
			continue
		}
		if err != nil || got == nil || strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%q: %v %v, want %v", tt.value, got, err, tt.want)
		}
	}
	if got, err := ResolveChannels("*", nil); err != nil || got == nil || len(got) != 0 {
		t.Errorf("* without channels: %v %v", got, err)
	}
}

func TestSlugify(t *testing.T) {
	for in, want := range map[string]string{
		// The reference's vectors (reference 14.4).
		"Foo Bar!": "foo-bar", "  Hello  World  ": "hello-world", "Āzis_Backup-1": "azis_backup-1",
		"--x--": "x", "_x_": "x", "a.b@c": "abc", "Hello---World": "hello-world", "日本": "",
		// Python's \s over ASCII, NFKD compatibility forms, underscores kept inside.
		"a\tb\x1fc": "a-b-c", "a\r\n\v\fb": "a-b", "ﬁle": "file", "Ｆｕｌｌ": "full", "x²": "x2",
		"": "", "a - _ b": "a-_-b", "-_a_-": "a", "__": "", "café crème": "cafe-creme",
		"a\u00a0b": "a-b", "a\u3000b": "a-b", // NFKD makes these spaces
		"a\u2028b":                 "ab", // a Unicode space that NFKD keeps: not ASCII, dropped
		"Nightly backup (prod) #3": "nightly-backup-prod-3",
	} {
		if got := Slugify(in); got != want {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzValidate(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `{"name": "x", "timeout": 60}`, `{"schedule": "daily", "tz": "Europe/Riga", "unique": ["name"]}`,
		`{"subject": "a", "subject_fail": "b", "filter_subject": false}`, `{"timeout": 1e99}`, `[1]`, `{"grace": -0}`,
		`{"schedule": "0 3 * * *", "timeout": 60, "grace": 120, "slug": "a-b", "methods": "POST", "channels": "*"}`,
		`{"unique": ["name", "timeout"], "name": "", "timeout": 86400, "tags": "a b"}`,
		`{"name": "Foo Bar", "tz": "US/Eastern", "manual_resume": true, "filter_http_body": true}`,
		`{"timeout": null, "name": 5, "unique": [null]}`,
		`{"name": "a` + strings.Repeat("\u3371", 99) + `"}`,
		`{"duration": 7200}`, `{"duration": 59.0}`,
		`{"desc": ` + jsonStr("😀", 10001) + `, "tags": ` + jsonStr("é", 500) + `}`,
	} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, body []byte, version uint8) {
		apiVersion := int(version%3) + 1
		o, err := ParseBody(body)
		if err != nil {
			if msg := err.Error(); msg != "could not parse request body" && msg != prefix+"value is not an object" {
				t.Fatalf("ParseBody message %q", msg)
			}
			return
		}
		o.APIKey()
		if d, err := Snooze(o); err == nil && (d < time.Minute || d > 31*24*time.Hour) {
			t.Fatalf("Snooze accepted %v", d)
		} else if err != nil && !strings.HasPrefix(err.Error(), prefix+"duration ") {
			t.Fatalf("Snooze message %q", err)
		}
		in, err := Validate(o, true)
		if err != nil {
			msg := err.Error()
			field := ""
			for _, f := range fieldOrder {
				if strings.HasPrefix(msg, prefix+f+" ") || f == "unique" && msg == prefix+"an item in 'unique' has unexpected value" {
					field = f
				}
			}
			if field == "" {
				t.Fatalf("message %q names no field", msg)
			}
			// Every field declared before the one reported is valid.
			before := Object{}
			for _, f := range fieldOrder {
				if f == field {
					break
				}
				if raw, ok := o[f]; ok {
					before[f] = raw
				}
			}
			if _, err := Validate(before, true); err != nil {
				t.Fatalf("reported %q, but an earlier field fails: %v", msg, err)
			}
			return
		}
		if upd, err := Validate(o, false); err != nil || upd.Unique != nil {
			t.Fatalf("update validates differently: %v %v", err, upd)
		}

		// A create, and an update of a cron and of a simple check.
		sched := "0 3 * * *"
		for _, start := range []v1.CheckSpec{v1.DefaultCheckSpec(), {Schedule: &sched, Grace: 60, TZ: "Asia/Tokyo"}} {
			s := *start.DeepCopy()
			in.Apply(&s, apiVersion)
			if (s.Timeout == nil) == (s.Schedule == nil) {
				t.Fatalf("timeout %v and schedule %v", s.Timeout, s.Schedule)
			}
			if s.Timeout != nil && (*s.Timeout < 60 || *s.Timeout > 31536000) || s.Grace < 60 || s.Grace > 31536000 {
				t.Fatalf("out of range: %+v", s)
			}
			if s.Schedule != nil && schedule.Validate(*s.Schedule) != nil {
				t.Fatalf("invalid schedule %q stored", *s.Schedule)
			}
			if tz, err := schedule.CanonicalTimezone(string(s.TZ)); err != nil || tz != string(s.TZ) {
				t.Fatalf("tz %q stored", s.TZ)
			}
			if !slugPattern(s.Slug) || utf8.RuneCountInString(s.Slug) > 100 || utf8.RuneCountInString(s.Name) > 100 ||
				utf8.RuneCountInString(s.Tags) > 500 || utf8.RuneCountInString(s.Desc) > 10000 ||
				(s.Methods != "" && s.Methods != "POST") {
				t.Fatalf("spec %+v", s)
			}
			for _, kw := range []string{s.StartKeywords, s.SuccessKeywords, s.FailureKeywords} {
				if utf8.RuneCountInString(kw) > 200 {
					t.Fatalf("keywords of %d characters", utf8.RuneCountInString(kw))
				}
			}
			again := *s.DeepCopy()
			in.Apply(&again, apiVersion)
			if !reflect.DeepEqual(again, s) {
				t.Fatalf("Apply is not idempotent: %+v then %+v", s, again)
			}
			if in.UniqueLookup() && !in.Matches(s) {
				t.Fatalf("a check created from the request does not match it: %+v", s)
			}
		}
		if in.Channels != nil {
			if _, err := ResolveChannels(*in.Channels, []ChannelRef{{Object: "a", ID: "1", Name: "A"}}); err != nil && err.Error() == "" {
				t.Fatal("empty channel message")
			}
		}
	})
}

func TestSnooze(t *testing.T) {
	for _, tc := range []struct {
		body string
		want time.Duration
		err  string
	}{
		{`{"duration": 7200}`, 2 * time.Hour, ""},
		{`{"duration": 60, "api_key": "x"}`, time.Minute, ""},
		{`{"duration": 2678400}`, 31 * 24 * time.Hour, ""},
		{`{}`, 0, "json validation error: duration is required: the seconds to snooze for, 60 to 2678400"},
		{`{"duration": 59}`, 0, "json validation error: duration is too small"},
		{`{"duration": 2678401}`, 0, "json validation error: duration is too large"},
		{`{"duration": "2h"}`, 0, "json validation error: duration is not a number"},
		{`{"duration": 1.5}`, 0, "json validation error: duration is not a number"},
		{`{"duration": -7200}`, 0, "json validation error: duration is too small"},
		{`{"duration": 99999999999999999999}`, 0, "json validation error: duration is too large"},
	} {
		o, err := ParseBody([]byte(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		got, err := Snooze(o)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: error %v, want %q", tc.body, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.body, got, err, tc.want)
		}
	}
}
