package checkinput

import (
	"errors"
	"strings"
	"testing"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func validate(t *testing.T, body string) (*Input, error) {
	t.Helper()
	o, err := ParseBody([]byte(body))
	if err != nil {
		return nil, err
	}
	return Validate(o, true)
}

func TestParseBody(t *testing.T) {
	for _, tt := range []struct{ body, err string }{
		{"", ""},
		{"{}", ""},
		{` {"a": 1} `, ""},
		{"{", "could not parse request body"},
		{"api_key=x", "could not parse request body"},
		{"\xef\xbb\xbf{}", "could not parse request body"},
		{"{\"name\": \"\xff\"}", "could not parse request body"},
		{"   ", "could not parse request body"},
		{"123", "json validation error: value is not an object"},
		{"null", "json validation error: value is not an object"},
		{`"x"`, "json validation error: value is not an object"},
		{"[]", "json validation error: value is not an object"},
	} {
		_, err := ParseBody([]byte(tt.body))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.err {
			t.Errorf("ParseBody(%q): %q, want %q", tt.body, got, tt.err)
		}
	}
	o, _ := ParseBody([]byte(`{"api_key": "a", "api_key": "b"}`))
	if k, ok := o.APIKey(); !ok || k != "b" {
		t.Errorf("duplicate keys keep the last: %q %v", k, ok)
	}
	o, _ = ParseBody([]byte(`{"api_key": 5}`))
	if _, ok := o.APIKey(); ok {
		t.Error("a non-string api_key is no key")
	}
}

// TestValidateMessages covers every row of the reference's schema table
// (4.5) and the order in which the first error is chosen.
func TestValidateMessages(t *testing.T) {
	long := func(n int) string { return `"` + strings.Repeat("é", n) + `"` }
	tests := []struct{ body, err string }{
		{`{"channels": 1}`, "channels is not a string"},
		{`{"desc": null}`, "desc is not a string"},
		{`{"failure_kw": []}`, "failure_kw is not a string"},
		{`{"failure_kw": ` + long(201) + `}`, "failure_kw is too long"},
		{`{"start_kw": ` + long(201) + `}`, "start_kw is too long"},
		{`{"success_kw": ` + long(201) + `}`, "success_kw is too long"},
		{`{"subject": ` + long(201) + `}`, "subject is too long"},
		{`{"subject_fail": 0}`, "subject_fail is not a string"},
		{`{"filter_subject": 0}`, "filter_subject is not a boolean"},
		{`{"filter_body": "true"}`, "filter_body is not a boolean"},
		{`{"filter_http_body": null}`, "filter_http_body is not a boolean"},
		{`{"filter_default_fail": 1}`, "filter_default_fail is not a boolean"},
		{`{"manual_resume": "false"}`, "manual_resume is not a boolean"},
		{`{"grace": 59}`, "grace is too small"},
		{`{"grace": 31536001}`, "grace is too large"},
		{`{"grace": "60"}`, "grace is not a number"},
		{`{"timeout": 3600.0}`, "timeout is not a number"},
		{`{"timeout": 1e4}`, "timeout is not a number"},
		{`{"timeout": null}`, "timeout is not a number"},
		{`{"timeout": true}`, "timeout is too small"},
		{`{"timeout": -100}`, "timeout is too small"},
		{`{"timeout": 86400000000000000000000}`, "timeout is too large"},
		{`{"timeout": 0}`, "timeout is too small"},
		{`{"methods": "post"}`, "methods has unexpected value"},
		{`{"methods": null}`, "methods has unexpected value"},
		{`{"methods": 1}`, "methods has unexpected value"},
		{`{"name": 5}`, "name is not a string"},
		{`{"name": ` + long(101) + `}`, "name is too long"},
		{`{"schedule": 5}`, "schedule is not a string"},
		{`{"schedule": "` + strings.Repeat("* ", 51) + `"}`, "schedule is too long"},
		{`{"schedule": "* * * * * *"}`, "schedule is not a valid cron or OnCalendar expression"},
		{`{"schedule": "@daily"}`, "schedule is not a valid cron or OnCalendar expression"},
		{`{"schedule": "0 0 30 2 *"}`, "schedule is not a valid cron or OnCalendar expression"},
		{`{"slug": "Abc"}`, "slug does not match pattern"},
		{`{"slug": "a b"}`, "slug does not match pattern"},
		{`{"slug": ` + `"` + strings.Repeat("a", 101) + `"}`, "slug is too long"},
		{`{"tags": ["a"]}`, "tags is not a string"},
		{`{"tz": "utc"}`, "tz is not a valid timezone"},
		{`{"tz": "Local"}`, "tz is not a valid timezone"},
		{`{"tz": 1}`, "tz is not a string"},
		{`{"unique": "name"}`, "unique is not an array"},
		{`{"unique": null}`, "unique is not an array"},
		{`{"unique": ["uuid"]}`, "an item in 'unique' has unexpected value"},
		{`{"unique": [1]}`, "an item in 'unique' has unexpected value"},
		// The first error in declaration order wins.
		{`{"timeout": 1, "name": 5}`, "name is not a string"},
		{`{"unique": 1, "channels": 1}`, "channels is not a string"},
		{`{"tz": "x", "timeout": 1}`, "timeout is too small"},
	}
	for _, tt := range tests {
		_, err := validate(t, tt.body)
		want := "json validation error: " + tt.err
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", tt.body, err, want)
		}
	}
}

func TestValidateAccepts(t *testing.T) {
	in, err := validate(t, `{"name": "`+strings.Repeat("😀", 100)+`", "timeout": 60, "grace": 31536000, "schedule": "daily",
		"tz": "Europe/Kiev", "methods": "POST", "manual_resume": true, "slug": "a-b_c", "unique": ["name", "name"],
		"api_key": "ignored", "unknown": {"x": 1}, "channels": "", "timeout": false, "timeout": 60}`)
	if err != nil {
		t.Fatal(err)
	}
	if *in.TZ != "Europe/Kyiv" {
		t.Errorf("tz %q: legacy names are stored canonical", *in.TZ)
	}
	if *in.Timeout != 60 || *in.Grace != 31536000 || *in.Channels != "" || len(in.Unique) != 2 {
		t.Errorf("input %+v", in)
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
		{"defaults", Defaults(), `{}`, 3, func(t *testing.T, s v1.CheckSpec) {
			if *s.Timeout != 86400 || s.Grace != 3600 || s.TZ != "UTC" || s.Schedule != nil {
				t.Errorf("%+v", s)
			}
		}},
		{"schedule wins over timeout and clears it", Defaults(), `{"schedule": "0 * * * *", "timeout": 60}`, 3, func(t *testing.T, s v1.CheckSpec) {
			if s.Timeout != nil || s.Schedule == nil || *s.Schedule != "0 * * * *" {
				t.Errorf("%+v", s)
			}
		}},
		{"schedule stored verbatim", Defaults(), `{"schedule": " 0 * * * * "}`, 3, func(t *testing.T, s v1.CheckSpec) {
			if *s.Schedule != " 0 * * * * " {
				t.Errorf("%q", *s.Schedule)
			}
		}},
		{"timeout makes a cron check simple", v1.CheckSpec{Schedule: str("0 * * * *"), Grace: 60}, `{"timeout": 3600}`, 3, func(t *testing.T, s v1.CheckSpec) {
			if s.Schedule != nil || *s.Timeout != 3600 || s.Grace != 60 {
				t.Errorf("%+v", s)
			}
		}},
		{"omitted fields unchanged", v1.CheckSpec{Name: "a", Tags: "x y", Timeout: i64(60), Grace: 60}, `{"desc": "d"}`, 3, func(t *testing.T, s v1.CheckSpec) {
			if s.Name != "a" || s.Tags != "x y" || *s.Timeout != 60 || s.Desc != "d" {
				t.Errorf("%+v", s)
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
		{"v1 explicit slug wins", v1.CheckSpec{}, `{"name": "Foo Bar", "slug": "x"}`, 1, func(t *testing.T, s v1.CheckSpec) {
			if s.Slug != "x" {
				t.Errorf("slug %q", s.Slug)
			}
		}},
		{"subject maps to keywords and the filter", v1.CheckSpec{}, `{"subject": "SUCCESS", "subject_fail": "FAIL"}`, 3, func(t *testing.T, s v1.CheckSpec) {
			if s.SuccessKeywords != "SUCCESS" || s.FailureKeywords != "FAIL" || !s.FilterSubject {
				t.Errorf("%+v", s)
			}
		}},
		{"explicit filter flag wins over subject", v1.CheckSpec{}, `{"subject": "SUCCESS", "filter_subject": false}`, 3, func(t *testing.T, s v1.CheckSpec) {
			if s.SuccessKeywords != "SUCCESS" || s.FilterSubject {
				t.Errorf("%+v", s)
			}
		}},
		{"empty subject clears", v1.CheckSpec{SuccessKeywords: "x", FilterSubject: true}, `{"subject": ""}`, 3, func(t *testing.T, s v1.CheckSpec) {
			if s.SuccessKeywords != "" || s.FilterSubject {
				t.Errorf("%+v", s)
			}
		}},
		{"everything else", v1.CheckSpec{}, `{"tags": "a b", "manual_resume": true, "methods": "POST", "tz": "US/Eastern", "start_kw": "s", "failure_kw": "f",
			"filter_body": true, "filter_http_body": true, "filter_default_fail": true, "grace": 120}`, 3, func(t *testing.T, s v1.CheckSpec) {
			if s.Tags != "a b" || !s.ManualResume || s.Methods != "POST" || s.TZ != "America/New_York" || s.StartKeywords != "s" ||
				s.FailureKeywords != "f" || !s.FilterBody || !s.FilterHTTPBody || !s.FilterDefaultFail || s.Grace != 120 {
				t.Errorf("%+v", s)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := validate(t, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			s := tt.start
			in.Apply(&s, tt.version)
			tt.check(t, s)
		})
	}
}

func TestUnique(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	cronCheck := v1.CheckSpec{Name: "cron", Schedule: new(string), Grace: 3600}
	tests := []struct {
		body   string
		lookup bool
		spec   v1.CheckSpec
		match  bool
	}{
		{`{"name": "a"}`, false, v1.CheckSpec{Name: "a"}, false},
		{`{"name": "a", "unique": []}`, false, v1.CheckSpec{Name: "a"}, false},
		{`{"unique": ["name"]}`, false, v1.CheckSpec{}, false},
		{`{"name": "a", "unique": ["name"]}`, true, v1.CheckSpec{Name: "a"}, true},
		{`{"name": "a", "unique": ["name"]}`, true, v1.CheckSpec{Name: "A"}, false},
		{`{"name": "", "unique": ["name"]}`, true, v1.CheckSpec{}, true},
		{`{"name": "a", "tags": "x", "unique": ["name", "tags"]}`, true, v1.CheckSpec{Name: "a", Tags: "x y"}, false},
		{`{"timeout": 3600, "unique": ["timeout"]}`, true, v1.CheckSpec{Timeout: i64(3600)}, true},
		{`{"timeout": 86400, "unique": ["timeout"]}`, true, cronCheck, true},
		{`{"grace": 3600, "slug": "s", "unique": ["grace", "slug"]}`, true, v1.CheckSpec{Grace: 3600, Slug: "s"}, true},
	}
	for _, tt := range tests {
		in, err := validate(t, tt.body)
		if err != nil {
			t.Fatal(err)
		}
		if got := in.UniqueLookup(); got != tt.lookup {
			t.Errorf("%s: UniqueLookup %v, want %v", tt.body, got, tt.lookup)
		}
		if tt.lookup {
			if got := in.Matches(tt.spec); got != tt.match {
				t.Errorf("%s vs %+v: Matches %v, want %v", tt.body, tt.spec, got, tt.match)
			}
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
	}
	tests := []struct {
		value string
		want  []string
		err   string
	}{
		{"", []string{}, ""},
		{"*", []string{"dev", "dup1", "dup2", "ops", "uuidname"}, ""},
		{"Ops", []string{"ops"}, ""},
		{"Dev Team,11111111-1111-4111-8111-111111111111,Ops", []string{"dev", "ops"}, ""},
		{"66666666-6666-4666-8666-666666666666", []string{"uuidname"}, ""},
		{"33333333-3333-4333-8333-333333333333", []string{"dup1"}, ""},
		{",", nil, "empty channel identifier"},
		{"Ops,", nil, "empty channel identifier"},
		{" Ops", nil, "invalid channel identifier:  Ops"},
		{"ops", nil, "invalid channel identifier: ops"},
		{"Same", nil, "non-unique channel identifier: Same"},
	}
	for _, tt := range tests {
		got, err := ResolveChannels(tt.value, refs)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err || !errors.Is(err, ErrChannels) {
				t.Errorf("%q: %v, want %q", tt.value, err, tt.err)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != strings.Join(tt.want, ",") || got == nil {
			t.Errorf("%q: %v %v, want %v", tt.value, got, err, tt.want)
		}
	}
}

func TestSlugify(t *testing.T) {
	for in, want := range map[string]string{
		"Foo Bar!": "foo-bar", "  Hello  World  ": "hello-world", "Āzis_Backup-1": "azis_backup-1",
		"--x--": "x", "_x_": "x", "a.b@c": "abc", "Hello---World": "hello-world", "日本": "",
		"a\tb\x1fc": "a-b-c", "ﬁle": "file", "": "", "a - _ b": "a-_-b",
	} {
		if got := Slugify(in); got != want {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSubjectFields(t *testing.T) {
	if s, f := SubjectFields(v1.CheckSpec{SuccessKeywords: "ok", FailureKeywords: "bad"}); s != "" || f != "" {
		t.Errorf("without the filter: %q %q", s, f)
	}
	if s, f := SubjectFields(v1.CheckSpec{SuccessKeywords: "ok", FailureKeywords: "bad", FilterSubject: true}); s != "ok" || f != "bad" {
		t.Errorf("with the filter: %q %q", s, f)
	}
}

func FuzzValidate(f *testing.F) {
	for _, s := range []string{`{}`, `{"name": "x", "timeout": 60}`, `{"schedule": "daily", "tz": "Europe/Riga", "unique": ["name"]}`,
		`{"subject": "a", "subject_fail": "b", "filter_subject": false}`, `{"timeout": 1e99}`, `[1]`, `{"grace": -0}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		o, err := ParseBody(body)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty message")
			}
			return
		}
		in, err := Validate(o, true)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "json validation error: ") {
				t.Fatalf("message %q", err)
			}
			return
		}
		s := Defaults()
		in.Apply(&s, 3)
		if (s.Timeout == nil) == (s.Schedule == nil) {
			t.Fatalf("timeout %v and schedule %v", s.Timeout, s.Schedule)
		}
		if s.Timeout != nil && (*s.Timeout < 60 || *s.Timeout > 31536000) || s.Grace < 60 || s.Grace > 31536000 {
			t.Fatalf("out of range: %+v", s)
		}
		if !slugPattern(s.Slug) || (s.Methods != "" && s.Methods != "POST") {
			t.Fatalf("spec %+v", s)
		}
		in.UniqueLookup()
		in.Matches(s)
	})
}
