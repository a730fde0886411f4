// Package checkinput decodes and validates the JSON body of the Management
// API's create and update requests exactly as the reference service does
// (field types, ranges, messages and the order in which the first error is
// chosen), and maps an accepted request onto a Check's spec.
//
// The schedule and time-zone checks are internal/schedule's, the same code
// the controller validates with, so the API never accepts a check the
// controller would then reject.
package checkinput

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/schedule"
)

// Limits of the reference's schema, in characters (code points), and the
// two it leaves to its database or to nothing: tags (its column holds 500)
// and desc (unbounded there; here 10,000, so a list of checks stays small).
// The CRD's maxLength markers say the same, so the API and kubectl agree.
const (
	minSeconds  = 60
	maxSeconds  = 31536000
	maxName     = 100
	maxSlug     = 100
	maxSchedule = 100
	maxKeywords = 200
	maxTags     = 500
	maxDesc     = 10000
)

// Object is a parsed request body: each top-level key with its raw JSON
// value, so that presence, null and type can be told apart.
type Object map[string]json.RawMessage

// Error is a request the schema rejects; its message is what the API
// returns in {"error": ...}.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

func schemaError(format string, args ...any) *Error {
	return &Error{msg: "json validation error: " + fmt.Sprintf(format, args...)}
}

// ParseBody parses a request body as the reference does: an empty body is
// an empty object; anything that is not valid UTF-8 JSON cannot be parsed;
// valid JSON that is not an object is a validation error. Duplicate keys
// keep their last value.
func ParseBody(data []byte) (Object, error) {
	if len(data) == 0 {
		return Object{}, nil
	}
	if !utf8.Valid(data) || !json.Valid(data) {
		return nil, &Error{msg: "could not parse request body"}
	}
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, &Error{msg: "json validation error: value is not an object"}
	}
	obj := Object{}
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, &Error{msg: "could not parse request body"}
	}
	return obj, nil
}

// APIKey is the body's api_key field, when it is a string. (The reference
// takes str() of any other value, such as "None" for null or "5"; none of
// those is a 32-character key, so they are no key here.)
func (o Object) APIKey() (string, bool) {
	var s string
	raw, ok := o["api_key"]
	if !ok || !isJSONString(raw) || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// Input is an accepted request: a nil field was not given.
type Input struct {
	Name, Slug, Tags, Desc    *string
	Timeout, Grace            *int64
	Schedule, TZ              *string
	ManualResume              *bool
	Methods                   *string
	Subject, SubjectFail      *string
	StartKw, SuccessKw        *string
	FailureKw                 *string
	FilterSubject, FilterBody *bool
	FilterHTTPBody            *bool
	FilterDefaultFail         *bool
	// Channels is the channels field as given, for ResolveChannels.
	Channels *string
	// Unique lists the fields an upsert matches on (create only).
	Unique []string
}

// fieldOrder is the order in which the reference reports the first error:
// the declaration order of its schema.
var fieldOrder = []string{
	"channels", "desc", "failure_kw", "filter_subject", "filter_body", "filter_http_body",
	"filter_default_fail", "grace", "manual_resume", "methods", "name", "schedule", "slug",
	"start_kw", "subject", "subject_fail", "success_kw", "tags", "timeout", "tz", "unique",
}

// Validate checks every known field of o and returns the request, or the
// first error in the reference's order; unknown keys (api_key among them)
// are ignored. Create and update share the reference's schema, so an
// update's unique is validated too, but it is dropped: only a create
// upserts.
func Validate(o Object, forCreate bool) (*Input, error) {
	in := &Input{}
	for _, f := range fieldOrder {
		raw, ok := o[f]
		if !ok {
			continue
		}
		if err := in.set(f, raw); err != nil {
			return nil, err
		}
	}
	if !forCreate {
		in.Unique = nil
	}
	return in, nil
}

func (in *Input) set(f string, raw json.RawMessage) error {
	var err error
	switch f {
	case "channels":
		in.Channels, err = str(f, raw, 0)
	case "desc":
		in.Desc, err = str(f, raw, maxDesc)
	case "failure_kw":
		in.FailureKw, err = str(f, raw, maxKeywords)
	case "start_kw":
		in.StartKw, err = str(f, raw, maxKeywords)
	case "success_kw":
		in.SuccessKw, err = str(f, raw, maxKeywords)
	case "subject":
		in.Subject, err = str(f, raw, maxKeywords)
	case "subject_fail":
		in.SubjectFail, err = str(f, raw, maxKeywords)
	case "filter_subject":
		in.FilterSubject, err = boolean(f, raw)
	case "filter_body":
		in.FilterBody, err = boolean(f, raw)
	case "filter_http_body":
		in.FilterHTTPBody, err = boolean(f, raw)
	case "filter_default_fail":
		in.FilterDefaultFail, err = boolean(f, raw)
	case "manual_resume":
		in.ManualResume, err = boolean(f, raw)
	case "grace":
		in.Grace, err = seconds(f, raw)
	case "timeout":
		in.Timeout, err = seconds(f, raw)
	case "methods":
		var s string
		if !isJSONString(raw) || json.Unmarshal(raw, &s) != nil || (s != "" && s != "POST") {
			return schemaError("methods has unexpected value")
		}
		in.Methods = &s
	case "name":
		in.Name, err = str(f, raw, maxName)
	case "schedule":
		if in.Schedule, err = str(f, raw, maxSchedule); err == nil {
			if schedule.Validate(*in.Schedule) != nil {
				return schemaError("schedule is not a valid cron or OnCalendar expression")
			}
		}
	case "slug":
		if in.Slug, err = str(f, raw, maxSlug); err == nil && !slugPattern(*in.Slug) {
			return schemaError("slug does not match pattern")
		}
	case "tags":
		in.Tags, err = str(f, raw, maxTags)
	case "tz":
		if in.TZ, err = str(f, raw, 0); err == nil {
			canonical, zerr := schedule.CanonicalTimezone(*in.TZ)
			if zerr != nil {
				return schemaError("tz is not a valid timezone")
			}
			in.TZ = &canonical
		}
	case "unique":
		in.Unique, err = uniqueFields(raw)
	}
	return err
}

// str decodes a JSON string of at most max code points (0: no limit).
func str(f string, raw json.RawMessage, max int) (*string, error) {
	var s string
	if !isJSONString(raw) || json.Unmarshal(raw, &s) != nil {
		return nil, schemaError("%s is not a string", f)
	}
	if max > 0 && utf8.RuneCountInString(s) > max {
		return nil, schemaError("%s is too long", f)
	}
	return &s, nil
}

func isJSONString(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '"'
}

// boolean accepts only true and false.
func boolean(f string, raw json.RawMessage) (*bool, error) {
	switch string(bytes.TrimSpace(raw)) {
	case "true":
		v := true
		return &v, nil
	case "false":
		v := false
		return &v, nil
	}
	return nil, schemaError("%s is not a boolean", f)
}

// seconds accepts a JSON integer (true and false count as 1 and 0, as in
// the reference) within 60..31536000. Integers of any size are compared
// without overflow.
func seconds(f string, raw json.RawMessage) (*int64, error) {
	return boundedSeconds(f, raw, minSeconds, maxSeconds)
}

// boundedSeconds is seconds within lo..hi.
func boundedSeconds(f string, raw json.RawMessage, lo, hi int64) (*int64, error) {
	t := string(bytes.TrimSpace(raw))
	switch t {
	case "true":
		t = "1"
	case "false":
		t = "0"
	}
	if t == "" || strings.ContainsAny(t, ".eE\"[{nN") {
		return nil, schemaError("%s is not a number", f)
	}
	negative := strings.HasPrefix(t, "-")
	digits := strings.TrimLeft(strings.TrimPrefix(t, "-"), "0")
	for _, c := range digits {
		if c < '0' || c > '9' {
			return nil, schemaError("%s is not a number", f)
		}
	}
	if negative && digits != "" {
		return nil, schemaError("%s is too small", f)
	}
	if len(digits) > 9 {
		return nil, schemaError("%s is too large", f)
	}
	var v int64
	for _, c := range digits {
		v = v*10 + int64(c-'0')
	}
	switch {
	case v < lo:
		return nil, schemaError("%s is too small", f)
	case v > hi:
		return nil, schemaError("%s is too large", f)
	}
	return &v, nil
}

// Snooze reads a snooze request (a Vigil extension): {"duration": N}, the
// seconds to hold the check's notifications for, 60 to 2678400 (31
// days). Other keys (api_key) are ignored.
func Snooze(o Object) (time.Duration, error) {
	raw, ok := o["duration"]
	if !ok {
		return 0, schemaError("duration is required: the seconds to snooze for, 60 to %d", maxSnooze)
	}
	v, err := boundedSeconds("duration", raw, minSeconds, maxSnooze)
	if err != nil {
		return 0, err
	}
	return time.Duration(*v) * time.Second, nil
}

// maxSnooze bounds a snooze, in seconds: 31 days (maintenance.MaxSnooze).
const maxSnooze = 31 * 24 * 3600

func uniqueFields(raw json.RawMessage) ([]string, error) {
	var items []json.RawMessage
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, schemaError("unique is not an array")
	}
	out := make([]string, 0, len(items))
	for _, item := range items {
		var s string
		if !isJSONString(item) || json.Unmarshal(item, &s) != nil {
			return nil, schemaError("an item in 'unique' has unexpected value")
		}
		switch s {
		case "name", "slug", "tags", "timeout", "grace":
			out = append(out, s)
		default:
			return nil, schemaError("an item in 'unique' has unexpected value")
		}
	}
	return out, nil
}

// slugPattern is ^[a-z0-9-_]*$.
func slugPattern(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// UniqueLookup reports whether a create request asks for an upsert: unique
// lists at least one field and every listed field is in the request. As in
// the reference, a listed field the request leaves out means no lookup (a
// plain create), not a comparison with the field's default.
func (in *Input) UniqueLookup() bool {
	if len(in.Unique) == 0 {
		return false
	}
	for _, f := range in.Unique {
		if in.field(f) == nil {
			return false
		}
	}
	return true
}

func (in *Input) field(f string) any {
	switch f {
	case "name":
		if in.Name != nil {
			return *in.Name
		}
	case "slug":
		if in.Slug != nil {
			return *in.Slug
		}
	case "tags":
		if in.Tags != nil {
			return *in.Tags
		}
	case "timeout":
		if in.Timeout != nil {
			return *in.Timeout
		}
	case "grace":
		if in.Grace != nil {
			return *in.Grace
		}
	}
	return nil
}

// Matches reports whether an existing check's spec equals the request on
// every field listed in unique (name, slug and tags as whole strings). An
// unset timeout or grace compares as its default: the reference keeps a
// timeout for a Cron check too, and a Cron check here stores none, so it
// matches on the default period; a grace of 0 is one the API server has
// not defaulted yet.
func (in *Input) Matches(spec v1.CheckSpec) bool {
	if !in.UniqueLookup() {
		return false // not an upsert: the request matches no check
	}
	for _, f := range in.Unique {
		var have any
		switch f {
		case "name":
			have = spec.Name
		case "slug":
			have = spec.Slug
		case "tags":
			have = spec.Tags
		case "timeout":
			have = spec.TimeoutSeconds()
		case "grace":
			have = spec.GraceSeconds()
		}
		if in.field(f) != have {
			return false
		}
	}
	return true
}

// Apply writes the request into spec in the reference's order: name (and,
// for API v1 and v2, the slug derived from it), the kind (a schedule wins
// over a timeout), the deprecated subject fields, then every other field,
// so explicit keywords and filter flags override the deprecated mapping.
// Channels are the caller's (ResolveChannels).
func (in *Input) Apply(spec *v1.CheckSpec, apiVersion int) {
	if in.Name != nil {
		spec.Name = *in.Name
		if apiVersion < 3 {
			spec.Slug = slugOf(*in.Name)
		}
	}
	switch {
	case in.Schedule != nil:
		s := *in.Schedule
		spec.Schedule, spec.Timeout = &s, nil
	case in.Timeout != nil:
		t := *in.Timeout
		spec.Timeout, spec.Schedule = &t, nil
	}
	if in.Subject != nil {
		spec.SuccessKeywords = *in.Subject
		spec.FilterSubject = spec.SuccessKeywords != "" || spec.FailureKeywords != ""
	}
	if in.SubjectFail != nil {
		spec.FailureKeywords = *in.SubjectFail
		spec.FilterSubject = spec.SuccessKeywords != "" || spec.FailureKeywords != ""
	}
	setString(&spec.Slug, in.Slug)
	setString(&spec.Tags, in.Tags)
	setString(&spec.Desc, in.Desc)
	setBool(&spec.ManualResume, in.ManualResume)
	setString(&spec.Methods, in.Methods)
	if in.TZ != nil {
		spec.TZ = v1.TimeZone(*in.TZ)
	}
	setString(&spec.StartKeywords, in.StartKw)
	setString(&spec.SuccessKeywords, in.SuccessKw)
	setString(&spec.FailureKeywords, in.FailureKw)
	setBool(&spec.FilterSubject, in.FilterSubject)
	setBool(&spec.FilterBody, in.FilterBody)
	setBool(&spec.FilterHTTPBody, in.FilterHTTPBody)
	setBool(&spec.FilterDefaultFail, in.FilterDefaultFail)
	if in.Grace != nil {
		spec.Grace = *in.Grace
	}
}

// slugOf is the slug API v1 and v2 derive from a name, cut to the slug's
// limit: a name of 100 characters can slugify to more ("㍱" is "hpa"),
// which the reference's database column would refuse.
func slugOf(name string) string {
	slug := Slugify(name)
	if len(slug) > maxSlug { // ASCII: bytes are characters
		slug = strings.Trim(slug[:maxSlug], "-_")
	}
	return slug
}

func setString(dst *string, v *string) {
	if v != nil {
		*dst = *v
	}
}

func setBool(dst *bool, v *bool) {
	if v != nil {
		*dst = *v
	}
}

// SubjectFields are the deprecated read-side fields, derived as the
// reference derives them: the keywords when subject filtering is on.
func SubjectFields(spec v1.CheckSpec) (subject, subjectFail string) {
	if !spec.FilterSubject {
		return "", ""
	}
	return spec.SuccessKeywords, spec.FailureKeywords
}
