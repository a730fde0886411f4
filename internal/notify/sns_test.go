package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
)

// The IAM user of the tests: none of these may appear in an error.
const (
	snsAccessKeyID  = "AKIAVIGILTESTKEY0001"
	snsSecretKey    = "snsSecret/AccessKey+VigilTest0123456789abcd"
	snsSessionToken = "IQoJsnsSessionTokenSecret/VigilTest=="
	snsRegionName   = "eu-west-2"
	snsStandardARN  = "arn:aws:sns:eu-west-2:123456789012:vigil-alerts"
	snsFIFOARN      = "arn:aws:sns:eu-west-2:123456789012:vigil-alerts.fifo"
)

var snsSecrets = map[string]string{"aws/accessKeyID": snsAccessKeyID, "aws/secretAccessKey": snsSecretKey + "\n"}

// snsOK is a Publish answer as SNS gives it.
const snsOK = `<PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/">
  <PublishResult>
    <MessageId>567910cd-659e-55d4-8ccb-5aaf14679dc0</MessageId>
  </PublishResult>
  <ResponseMetadata>
    <RequestId>d74b8436-ae13-5ab4-a9ff-ce54dfea72a0</RequestId>
  </ResponseMetadata>
</PublishResponse>`

func init() {
	addHTTPKind(httpKindCase{v1.ChannelSNS, func(base string) *v1.Channel { return snsChannel(snsStandardARN, base) },
		func(string) map[string]string { return snsSecrets }}, snsAccessKeyID, snsSecretKey, snsSessionToken)
	successAnswers[v1.ChannelSNS] = snsOK
}

func snsChannel(arn, endpoint string) *v1.Channel {
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelSNS, SNS: &v1.SNSChannel{
		TopicARN: arn, Endpoint: endpoint, CredentialsSecretRef: v1.LocalSecretRef{Name: "aws"}}})
}

// ---- A loopback SNS: it checks requests as the Query API does. ----

// fakeSNS checks each request's SigV4 signature from scratch (sigV4Check,
// written from the specification, not the SDK), then the Publish
// parameters, and answers as SNS does: a PublishResponse, or an
// ErrorResponse.
type fakeSNS struct {
	*httptest.Server
	t      *testing.T
	region string
	topic  string
	// keys are the access keys it knows: id -> secret key.
	keys map[string]string
	// token is the session token requests must carry ("" for none).
	token string

	mu        sync.Mutex
	published []snsPublished
	requests  int
	dedup     map[string]bool
	// fail, when set, is the error answered after a request is checked.
	fail *snsFault
}

type snsFault struct {
	status        int
	code, message string
}

// snsPublished is a message the fake accepted.
type snsPublished struct {
	Subject, Message         string
	GroupID, DeduplicationID string
	Attributes               map[string]snsWireAttribute
	Header                   http.Header
	Path                     string
}

type snsWireAttribute struct{ DataType, Value string }

func newFakeSNS(t *testing.T, region, topic string) *fakeSNS {
	t.Helper()
	f := &fakeSNS{t: t, region: region, topic: topic, keys: map[string]string{snsAccessKeyID: snsSecretKey}, dedup: map[string]bool{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeSNS) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if r.Method != http.MethodPost || r.URL.Path != "/" || r.URL.RawQuery != "" {
		f.t.Errorf("request %s %s?%s, want POST /", r.Method, r.URL.Path, r.URL.RawQuery)
	}
	if code, msg := sigV4Check(r, body, f.keys, f.token, f.region, "sns", now()); code != "" {
		status := http.StatusForbidden
		if code == "IncompleteSignature" || code == "MissingAuthenticationToken" {
			status = http.StatusBadRequest
		}
		snsWriteError(w, status, code, msg)
		return
	}
	p, code, msg := f.checkPublish(r, body)
	if code != "" {
		status := http.StatusBadRequest
		if code == "NotFound" {
			status = http.StatusNotFound
		}
		snsWriteError(w, status, code, msg)
		return
	}
	if f.fail != nil {
		snsWriteError(w, f.fail.status, f.fail.code, f.fail.message)
		return
	}
	// A FIFO topic drops a message whose deduplication id it has seen
	// (within five minutes), and answers as if it published it.
	if p.DeduplicationID == "" || !f.dedup[p.DeduplicationID] {
		f.dedup[p.DeduplicationID] = true
		f.published = append(f.published, p)
	}
	w.Header().Set("Content-Type", "text/xml")
	_, _ = io.WriteString(w, snsOK)
}

func snsWriteError(w http.ResponseWriter, status int, code, msg string) {
	typ := "Sender"
	if status >= 500 {
		typ = "Receiver"
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<ErrorResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/">
  <Error>
    <Type>%s</Type>
    <Code>%s</Code>
    <Message>%s</Message>
  </Error>
  <RequestId>9a1c8a76-6b43-5b5b-9a0f-3c0c1f0d4e21</RequestId>
</ErrorResponse>`, typ, code, msg)
}

func (f *fakeSNS) messages() []snsPublished {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]snsPublished(nil), f.published...)
}

func (f *fakeSNS) only(t *testing.T) snsPublished {
	t.Helper()
	ps := f.messages()
	if len(ps) != 1 {
		t.Fatalf("SNS published %d messages, want 1", len(ps))
	}
	return ps[0]
}

var (
	snsAttrParam  = regexp.MustCompile(`^MessageAttributes\.entry\.([1-9][0-9]*)\.(Name|Value\.DataType|Value\.StringValue)$`)
	snsAttrName   = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,256}$`)
	snsWireID     = regexp.MustCompile(`^[\x21-\x7e]{1,128}$`)
	snsMessageMax = 256 * 1024
)

// checkPublish checks a Publish request's parameters as SNS does, and the
// test's expectations of them (each parameter once, nothing unknown).
// Failures of Vigil's own are test errors too.
func (f *fakeSNS) checkPublish(r *http.Request, body []byte) (snsPublished, string, string) {
	t := f.t
	if ct := r.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		t.Errorf("the body is not form-encoded: %v", err)
		return snsPublished{}, "MalformedQueryString", "bad form"
	}
	bad := func(format string, args ...any) (snsPublished, string, string) {
		msg := fmt.Sprintf(format, args...)
		t.Errorf("Publish: %s", msg)
		return snsPublished{}, "InvalidParameter", "Invalid parameter: " + msg
	}
	attrs := map[int]map[string]string{}
	for k, vs := range form {
		if len(vs) != 1 {
			return bad("%s given %d times", k, len(vs))
		}
		switch k {
		case "Action", "Version", "TopicArn", "Subject", "Message", "MessageGroupId", "MessageDeduplicationId":
			continue
		}
		m := snsAttrParam.FindStringSubmatch(k)
		if m == nil {
			return bad("unknown parameter %s", k)
		}
		n, _ := strconv.Atoi(m[1])
		if attrs[n] == nil {
			attrs[n] = map[string]string{}
		}
		attrs[n][m[2]] = vs[0]
	}
	if form.Get("Action") != "Publish" || form.Get("Version") != "2010-03-31" {
		return bad("Action %q Version %q", form.Get("Action"), form.Get("Version"))
	}
	if arn := form.Get("TopicArn"); arn != f.topic {
		return snsPublished{}, "NotFound", "Topic does not exist"
	}
	p := snsPublished{Subject: form.Get("Subject"), Message: form.Get("Message"), GroupID: form.Get("MessageGroupId"),
		DeduplicationID: form.Get("MessageDeduplicationId"), Attributes: map[string]snsWireAttribute{}, Header: r.Header.Clone(), Path: r.URL.Path}
	if s := p.Subject; s != "" {
		if len(s) >= 100 {
			return bad("Subject must be less than 100 characters: %d", len(s))
		}
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] > 0x7e {
				return bad("Subject holds %q, not printable ASCII", s[i])
			}
		}
		if c := rune(s[0]); !unicode.IsLetter(c) && !unicode.IsDigit(c) && !unicode.IsPunct(c) {
			return bad("Subject starts with %q", c)
		}
	}
	size := len(p.Message)
	if p.Message == "" || !utf8.ValidString(p.Message) {
		return bad("Message empty or not UTF-8")
	}
	for _, c := range p.Message {
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0xFFFE || c == 0xFFFF {
			return bad("Message holds %U", c)
		}
	}
	for n := 1; n <= len(attrs); n++ {
		a := attrs[n]
		if a == nil || len(a) != 3 {
			return bad("message attribute %d incomplete or out of order: %v", n, attrs)
		}
		name, typ, value := a["Name"], a["Value.DataType"], a["Value.StringValue"]
		if !snsAttrName.MatchString(name) || strings.HasPrefix(name, "AWS.") || strings.HasPrefix(name, "Amazon.") {
			return bad("attribute name %q", name)
		}
		if _, dup := p.Attributes[name]; dup {
			return bad("attribute %s twice", name)
		}
		switch typ {
		case "String":
		case "String.Array":
			var arr []any
			if json.Unmarshal([]byte(value), &arr) != nil {
				return bad("attribute %s is not a JSON array: %q", name, value)
			}
		default:
			return bad("attribute %s of type %q", name, typ)
		}
		if value == "" || !utf8.ValidString(value) {
			return bad("attribute %s empty or not UTF-8", name)
		}
		size += len(name) + len(typ) + len(value)
		p.Attributes[name] = snsWireAttribute{typ, value}
	}
	if len(attrs) > 10 {
		return bad("%d message attributes, at most 10", len(attrs))
	}
	if size > snsMessageMax {
		return bad("message and attributes of %d bytes, over 256 KB", size)
	}
	if fifo := strings.HasSuffix(f.topic, ".fifo"); fifo {
		if !snsWireID.MatchString(p.GroupID) || !snsWireID.MatchString(p.DeduplicationID) {
			return bad("FIFO ids MessageGroupId %q MessageDeduplicationId %q", p.GroupID, p.DeduplicationID)
		}
	} else if form.Has("MessageGroupId") || form.Has("MessageDeduplicationId") {
		return bad("FIFO ids sent to a standard topic")
	}
	return p, "", ""
}

// ---- SigV4, from the specification ----
// https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html

// sigV4Check verifies a request's Authorization header as AWS does:
// the algorithm, the credential scope (<date>/<region>/<service>/aws4_request)
// and its date, X-Amz-Date within 15 minutes of now, the session token
// when one is expected, and the signature recomputed from the canonical
// request with the secret key of the access key id. It returns AWS's error
// code and message, or "" when the request is authentic.
func sigV4Check(r *http.Request, body []byte, keys map[string]string, token, region, service string, now time.Time) (string, string) {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return "MissingAuthenticationToken", "Request is missing Authentication Token"
	}
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return "IncompleteSignature", "Unsupported AWS 'algorithm'"
	}
	fields := map[string]string{}
	for _, part := range strings.Split(rest, ", ") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return "IncompleteSignature", "Authorization header requires 'Credential', 'SignedHeaders' and 'Signature'"
		}
		fields[k] = v
	}
	cred := strings.Split(fields["Credential"], "/")
	signed := fields["SignedHeaders"]
	if len(cred) != 5 || signed == "" || fields["Signature"] == "" {
		return "IncompleteSignature", "Authorization header requires 'Credential', 'SignedHeaders' and 'Signature'"
	}
	secret, known := keys[cred[0]]
	if !known {
		return "InvalidClientTokenId", "The security token included in the request is invalid."
	}
	amzDate := r.Header.Get("X-Amz-Date")
	at, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil {
		return "IncompleteSignature", "Date must be in ISO-8601 'basic format'"
	}
	if d := now.Sub(at); d > 15*time.Minute || d < -15*time.Minute {
		return "SignatureDoesNotMatch", "Signature expired: " + amzDate + " is now earlier or later than 15 min. from " + now.UTC().Format("20060102T150405Z")
	}
	if cred[1] != amzDate[:8] || cred[2] != region || cred[3] != service || cred[4] != "aws4_request" {
		return "SignatureDoesNotMatch", "Credential should be scoped to a valid region, service and date: " + strings.Join(cred[1:], "/")
	}
	names := strings.Split(signed, ";")
	if !sort.StringsAreSorted(names) || !containsAll(names, "host", "x-amz-date") {
		return "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided."
	}
	if got := r.Header.Get("X-Amz-Security-Token"); got != token || (token != "" && !containsAll(names, "x-amz-security-token")) {
		return "InvalidClientTokenId", "The security token included in the request is invalid."
	}
	canonical := sigV4CanonicalRequest(r, names, body)
	scope := strings.Join(cred[1:], "/")
	sum := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
	key := []byte("AWS4" + secret)
	for _, part := range cred[1:] {
		key = hmacSHA256(key, part)
	}
	want := hex.EncodeToString(hmacSHA256(key, toSign))
	if !hmac.Equal([]byte(want), []byte(fields["Signature"])) {
		return "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. " +
			"Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
	}
	return "", ""
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

func containsAll(list []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, l := range list {
			found = found || l == w
		}
		if !found {
			return false
		}
	}
	return true
}

// sigV4CanonicalRequest is the canonical request: method, canonical URI
// (each segment URI-encoded, twice for services other than S3), canonical
// query string (sorted, encoded), the signed headers (lowercase name,
// trimmed value with inner spaces collapsed), their names, and the hex
// SHA-256 of the payload.
func sigV4CanonicalRequest(r *http.Request, names []string, body []byte) string {
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = sigV4Encode(s)
	}
	var query []string
	for k, vs := range r.URL.Query() {
		for _, v := range vs {
			query = append(query, sigV4Encode(k)+"="+sigV4Encode(v))
		}
	}
	sort.Strings(query)
	var headers strings.Builder
	for _, n := range names {
		var vals []string
		switch n {
		case "host":
			vals = []string{r.Host}
		case "content-length":
			vals = []string{strconv.FormatInt(r.ContentLength, 10)}
		default:
			vals = append([]string(nil), r.Header.Values(n)...)
		}
		for i, v := range vals {
			vals[i] = strings.Join(strings.Fields(v), " ")
		}
		headers.WriteString(n + ":" + strings.Join(vals, ",") + "\n")
	}
	sum := sha256.Sum256(body)
	return strings.Join([]string{r.Method, strings.Join(segs, "/"), strings.Join(query, "&"),
		headers.String(), strings.Join(names, ";"), hex.EncodeToString(sum[:])}, "\n")
}

// sigV4Encode is SigV4's URI encoding: every byte but A-Z a-z 0-9 - . _ ~
// as %XX, in upper case.
func sigV4Encode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// The verifier itself agrees with AWS's published example (IAM
// ListUsers, https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html):
// its canonical request hash and its signature, and it refuses the same
// request tampered with, signed with another key, or stale.
func TestSigV4CheckAgreesWithAWSExample(t *testing.T) {
	const (
		id     = "AKIDEXAMPLE"
		secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
		sig    = "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
	)
	at := time.Date(2015, 8, 30, 12, 36, 0, 0, time.UTC)
	example := func(query string) *http.Request {
		r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "https://iam.amazonaws.com/?"+query, nil)
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		r.Header.Set("X-Amz-Date", "20150830T123600Z")
		r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+id+"/20150830/us-east-1/iam/aws4_request, "+
			"SignedHeaders=content-type;host;x-amz-date, Signature="+sig)
		return r
	}
	r := example("Action=ListUsers&Version=2010-05-08")
	sum := sha256.Sum256([]byte(sigV4CanonicalRequest(r, []string{"content-type", "host", "x-amz-date"}, nil)))
	if got := hex.EncodeToString(sum[:]); got != "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59" {
		t.Errorf("canonical request hash %s", got)
	}
	keys := map[string]string{id: secret}
	if code, msg := sigV4Check(r, nil, keys, "", "us-east-1", "iam", at.Add(time.Minute)); code != "" {
		t.Fatalf("the documented example does not verify: %s %s", code, msg)
	}
	for name, tc := range map[string]struct {
		r               *http.Request
		keys            map[string]string
		region, service string
		at              time.Time
		want            string
	}{
		"tampered":        {example("Action=ListUsers&Version=2010-05-09"), keys, "us-east-1", "iam", at, "SignatureDoesNotMatch"},
		"another secret":  {example("Action=ListUsers&Version=2010-05-08"), map[string]string{id: secret + "x"}, "us-east-1", "iam", at, "SignatureDoesNotMatch"},
		"unknown key":     {example("Action=ListUsers&Version=2010-05-08"), map[string]string{}, "us-east-1", "iam", at, "InvalidClientTokenId"},
		"stale":           {example("Action=ListUsers&Version=2010-05-08"), keys, "us-east-1", "iam", at.Add(16 * time.Minute), "SignatureDoesNotMatch"},
		"another region":  {example("Action=ListUsers&Version=2010-05-08"), keys, "eu-west-1", "iam", at, "SignatureDoesNotMatch"},
		"another service": {example("Action=ListUsers&Version=2010-05-08"), keys, "us-east-1", "sns", at, "SignatureDoesNotMatch"},
	} {
		if code, _ := sigV4Check(tc.r, nil, tc.keys, "", tc.region, tc.service, tc.at); code != tc.want {
			t.Errorf("%s: %q, want %s", name, code, tc.want)
		}
	}
}

// ---- The kind ----

// snsDownText is downMessage() as SNS publishes it.
const snsDownText = `“Nightly backup” is DOWN.
Reason: success signal did not arrive on time, grace time passed.

Description: Backs up the orders database.
Namespace: team-a
Tags: prod db
Period: 1 day
Total Pings: 42
Last Ping: Success, 10 minutes ago

Last ping body:
backup done: 3 files

https://vigil.example.com/checks/` + fixtureUUID

func TestSNS(t *testing.T) {
	f := newFakeSNS(t, snsRegionName, snsStandardARN)
	test := downMessage()
	test.Test = true
	for _, m := range []Message{downMessage(), upMessage(), test} {
		mustSend(t, snsChannel(snsStandardARN, f.URL), m, snsSecrets)
	}
	ps := f.messages()
	if len(ps) != 3 {
		t.Fatalf("%d messages published, want 3", len(ps))
	}
	for _, p := range ps {
		checkUserAgent(t, p.Header)
		if p.Header.Get("X-Amz-Security-Token") != "" {
			t.Error("a session token was sent without one in the Secret")
		}
	}
	attrs := func(status string, extra ...string) map[string]snsWireAttribute {
		a := map[string]snsWireAttribute{
			"status":     {"String", status},
			"namespace":  {"String", "team-a"},
			"check":      {"String", "nightly-backup"},
			"check_uuid": {"String", fixtureUUID},
			"tags":       {"String.Array", `["prod","db"]`},
		}
		for i := 0; i < len(extra); i += 2 {
			a[extra[i]] = snsWireAttribute{"String", extra[i+1]}
		}
		return a
	}
	want := []snsPublished{
		{Subject: "Nightly backup is DOWN", Message: snsDownText, Attributes: attrs("down")},
		{Subject: "Nightly backup is UP", Attributes: attrs("up")},
		{Subject: "[Test] Nightly backup is DOWN", Attributes: attrs("down", "test", "true")},
	}
	for i, p := range ps {
		if p.Subject != want[i].Subject || !reflect.DeepEqual(p.Attributes, want[i].Attributes) || p.GroupID != "" || p.DeduplicationID != "" {
			t.Errorf("message %d: subject %q attributes %v group %q dedup %q; want %q %v",
				i, p.Subject, p.Attributes, p.GroupID, p.DeduplicationID, want[i].Subject, want[i].Attributes)
		}
	}
	if ps[0].Message != snsDownText {
		t.Errorf("down message\n%s\nwant\n%s", ps[0].Message, snsDownText)
	}
	if !strings.HasPrefix(ps[1].Message, "“Nightly backup” is UP.\n\nDescription: ") || !strings.HasPrefix(ps[2].Message, "[Test] “Nightly backup” is DOWN.") {
		t.Errorf("up message %q, test message %q", ps[1].Message, ps[2].Message)
	}
}

// Temporary credentials: the session token goes in X-Amz-Security-Token,
// signed; a sessionToken key that is blank counts as none.
func TestSNSSessionToken(t *testing.T) {
	f := newFakeSNS(t, snsRegionName, snsStandardARN)
	f.token = snsSessionToken
	secrets := map[string]string{"aws/accessKeyID": snsAccessKeyID, "aws/secretAccessKey": snsSecretKey, "aws/sessionToken": snsSessionToken + "\n"}
	mustSend(t, snsChannel(snsStandardARN, f.URL), downMessage(), secrets)
	p := f.only(t)
	checkHeader(t, p.Header, "X-Amz-Security-Token", snsSessionToken)
	if !strings.Contains(p.Header.Get("Authorization"), "SignedHeaders=content-length;content-type;host;x-amz-date;x-amz-security-token, ") {
		t.Errorf("Authorization %q", p.Header.Get("Authorization"))
	}
	// Without the token the fake refuses the key, permanently.
	err := send(t, snsChannel(snsStandardARN, f.URL), downMessage(), snsSecrets)
	if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "InvalidClientTokenId") {
		t.Errorf("Send without the token = %v", err)
	}
	f2 := newFakeSNS(t, snsRegionName, snsStandardARN)
	secrets["aws/sessionToken"] = " \n"
	mustSend(t, snsChannel(snsStandardARN, f2.URL), downMessage(), secrets)
	checkHeader(t, f2.only(t).Header, "X-Amz-Security-Token", "")
}

// A FIFO topic gets one message group per check and a deduplication id
// per notification: a retry of a publish that went through is dropped.
func TestSNSFIFO(t *testing.T) {
	f := newFakeSNS(t, snsRegionName, snsFIFOARN)
	ch := snsChannel(snsFIFOARN, f.URL)
	mustSend(t, ch, downMessage(), snsSecrets)
	mustSend(t, ch, downMessage(), snsSecrets) // the same notification again: a retry
	mustSend(t, ch, upMessage(), snsSecrets)
	ps := f.messages()
	if len(ps) != 2 || f.requests != 3 {
		t.Fatalf("%d published of %d requests, want 2 of 3", len(ps), f.requests)
	}
	if ps[0].GroupID != "vigil-"+fixtureUUID || ps[1].GroupID != ps[0].GroupID {
		t.Errorf("group ids %q %q", ps[0].GroupID, ps[1].GroupID)
	}
	dedup := regexp.MustCompile(`^vigil-[0-9a-f]{32}$`)
	if !dedup.MatchString(ps[0].DeduplicationID) || !dedup.MatchString(ps[1].DeduplicationID) || ps[0].DeduplicationID == ps[1].DeduplicationID {
		t.Errorf("deduplication ids %q %q", ps[0].DeduplicationID, ps[1].DeduplicationID)
	}
	// A test notification is a group of its own.
	test := downMessage()
	test.Test = true
	mustSend(t, ch, test, snsSecrets)
	if ps := f.messages(); len(ps) != 3 || ps[2].GroupID != "vigil-test-"+fixtureUUID {
		t.Errorf("test message %+v", ps[len(ps)-1])
	}
	// A grouped message (storm control) has the group's key.
	g := Message{Check: CheckInfo{Namespace: "team-a", Name: "3 checks", UUID: "group-abc-7"}, Time: fixedFlip,
		Group: []GroupedCheck{{Name: "a", At: fixedFlip}, {Name: "b", At: fixedFlip}, {Name: "c", At: fixedFlip}}}
	mustSend(t, ch, g, snsSecrets)
	ps = f.messages()
	last := ps[len(ps)-1]
	if last.GroupID != "vigil-group-abc-7" || last.Subject != "3 checks in team-a are DOWN" {
		t.Errorf("grouped message %q %q", last.GroupID, last.Subject)
	}
	if _, ok := last.Attributes["check_uuid"]; ok || last.Attributes["namespace"].Value != "team-a" {
		t.Errorf("grouped message attributes %v", last.Attributes)
	}
}

// A wrong secret key: SNS answers 403 SignatureDoesNotMatch, which no retry
// fixes, and the error tells it without any credential.
func TestSNSWrongSecret(t *testing.T) {
	f := newFakeSNS(t, snsRegionName, snsStandardARN)
	const wrong = "snsWrongSecretKeyValue0123456789"
	secrets := map[string]string{"aws/accessKeyID": snsAccessKeyID, "aws/secretAccessKey": wrong}
	err := send(t, snsChannel(snsStandardARN, f.URL), downMessage(), secrets)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusForbidden || !IsPermanent(err) {
		t.Fatalf("Send = %v, want a permanent 403", err)
	}
	if !strings.HasPrefix(err.Error(), "sns: POST "+f.URL+": HTTP 403 Forbidden: SignatureDoesNotMatch: The request signature we calculated") {
		t.Errorf("error %q", err)
	}
	for _, s := range []string{wrong, snsSecretKey, snsAccessKeyID} {
		if strings.Contains(err.Error(), s) || strings.Contains(se.Body, s) {
			t.Errorf("error %q shows a credential", err)
		}
	}
	if len(f.messages()) != 0 {
		t.Error("SNS published a message signed with the wrong key")
	}
	// An access key SNS does not know.
	secrets["aws/accessKeyID"] = "AKIAUNKNOWNKEY000000"
	err = send(t, snsChannel(snsStandardARN, f.URL), downMessage(), secrets)
	if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "InvalidClientTokenId") || strings.Contains(err.Error(), "AKIAUNKNOWNKEY000000") {
		t.Errorf("Send with an unknown key = %v", err)
	}
}

// SNS's errors by their code: throttling and 5xx are retried, the rest is
// not, whatever the status says.
func TestSNSErrors(t *testing.T) {
	for _, tc := range []struct {
		status        int
		code, message string
		permanent     bool
	}{
		{400, "Throttling", "Rate exceeded", false},
		{400, "ThrottlingException", "Rate exceeded", false},
		{400, "KMSThrottling", "The request was denied due to request throttling.", false},
		{400, "RequestExpired", "Request has expired.", false},
		{500, "InternalError", "An internal service error occurred.", false},
		{503, "ServiceUnavailable", "Service is unavailable at this time.", false},
		{400, "InvalidParameter", "Invalid parameter: Message too long", true},
		{403, "AuthorizationError", "User: arn:aws:iam::123456789012:user/vigil is not authorized to perform: SNS:Publish on resource", true},
		{404, "NotFound", "Topic does not exist", true},
		{400, "KMSDisabled", "The request was rejected because the specified customer master key (CMK) isn't enabled.", true},
	} {
		t.Run(tc.code, func(t *testing.T) {
			f := newFakeSNS(t, snsRegionName, snsStandardARN)
			f.fail = &snsFault{tc.status, tc.code, tc.message}
			err := send(t, snsChannel(snsStandardARN, f.URL), downMessage(), snsSecrets)
			var se *StatusError
			if !errors.As(err, &se) || se.Code != tc.status || IsPermanent(err) != tc.permanent {
				t.Fatalf("Send = %v (permanent %v), want HTTP %d permanent %v", err, IsPermanent(err), tc.status, tc.permanent)
			}
			if want := tc.code + ": " + tc.message; se.Body != want {
				t.Errorf("StatusError body %q, want %q", se.Body, want)
			}
			checkNoCredentials(t, err)
		})
	}
	// A topic that does not exist, as the fake finds it.
	f := newFakeSNS(t, snsRegionName, "arn:aws:sns:eu-west-2:123456789012:other")
	if err := send(t, snsChannel(snsStandardARN, f.URL), downMessage(), snsSecrets); err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "NotFound: Topic does not exist") {
		t.Errorf("Send to a missing topic = %v", err)
	}
}

func TestSNSErrorOf(t *testing.T) {
	full := `<ErrorResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><Error><Type>Sender</Type><Code>Throttling</Code>` +
		`<Message>Rate exceeded</Message></Error><RequestId>x</RequestId></ErrorResponse>`
	for _, tc := range []struct{ in, code, msg string }{
		{full, "Throttling", "Rate exceeded"},
		{strings.SplitAfter(full, "Rate ")[0], "Throttling", "Rate"}, // cut short
		{"<html><body>Bad Gateway</body></html>", "", ""},
		{"not xml at all", "", ""},
		{`<ErrorResponse><Error><Code>no such code!</Code></Error></ErrorResponse>`, "", ""},
		{`<Other><Error><Code>Throttling</Code></Error></Other>`, "", ""},
		{`<ErrorResponse><Error><Code>` + strings.Repeat("A", 65) + `</Code></Error></ErrorResponse>`, "", ""},
	} {
		if code, msg := snsErrorOf(tc.in); code != tc.code || msg != tc.msg {
			t.Errorf("snsErrorOf(%.40q) = %q, %q; want %q, %q", tc.in, code, msg, tc.code, tc.msg)
		}
	}
}

// The region signs the request: the topic's by default, the Channel's
// when set.
func TestSNSRegion(t *testing.T) {
	const arn = "arn:aws:sns:ap-southeast-2:123456789012:ops"
	f := newFakeSNS(t, "ap-southeast-2", arn)
	mustSend(t, snsChannel(arn, f.URL), downMessage(), snsSecrets)
	if a := f.only(t).Header.Get("Authorization"); !strings.Contains(a, "Credential="+snsAccessKeyID+"/20240501/ap-southeast-2/sns/aws4_request, ") {
		t.Errorf("Authorization %q", a)
	}
	checkHeader(t, f.only(t).Header, "X-Amz-Date", "20240501T121000Z")
	// A Channel's region replaces the topic's; a fake of another region
	// refuses the scope.
	ch := snsChannel(arn, f.URL)
	ch.Spec.SNS.Region = "eu-central-1"
	if err := send(t, ch, downMessage(), snsSecrets); err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "SignatureDoesNotMatch: Credential should be scoped") {
		t.Errorf("Send signed for eu-central-1 = %v", err)
	}
	f2 := newFakeSNS(t, "eu-central-1", arn)
	ch.Spec.SNS.Endpoint = f2.URL
	mustSend(t, ch, downMessage(), snsSecrets)
	if a := f2.only(t).Header.Get("Authorization"); !strings.Contains(a, "/20240501/eu-central-1/sns/aws4_request, ") {
		t.Errorf("Authorization %q", a)
	}
}

// Where the requests go: sns.<region>.amazonaws.com, .amazonaws.com.cn in
// China, the Channel's endpoint when set. The gate is asked for the
// endpoint before anything connects.
func TestSNSEndpoints(t *testing.T) {
	refused := errors.New("not now")
	for _, tc := range []struct {
		arn, region, endpoint, want string
	}{
		{snsStandardARN, "", "", "sns.eu-west-2.amazonaws.com:443"},
		{"arn:aws-cn:sns:cn-north-1:123456789012:ops", "", "", "sns.cn-north-1.amazonaws.com.cn:443"},
		{"arn:aws-us-gov:sns:us-gov-west-1:123456789012:ops", "", "", "sns.us-gov-west-1.amazonaws.com:443"},
		{snsStandardARN, "eu-central-1", "", "sns.eu-central-1.amazonaws.com:443"},
		{snsStandardARN, "", "https://vpce-0a1b-c2d3.sns.eu-west-2.vpce.amazonaws.com", "vpce-0a1b-c2d3.sns.eu-west-2.vpce.amazonaws.com:443"},
		{"arn:aws-iso:sns:us-iso-east-1:123456789012:ops", "", "https://sns.us-iso-east-1.c2s.ic.gov:8443/", "sns.us-iso-east-1.c2s.ic.gov:8443"},
	} {
		ch := snsChannel(tc.arn, tc.endpoint)
		ch.Spec.SNS.Region = tc.region
		var asked []string
		err := Send(t.Context(), Delivery{Channel: ch, Message: downMessage(), Secret: secretMap(snsSecrets),
			Gate: func(endpoint string) error { asked = append(asked, endpoint); return refused }})
		if !errors.Is(err, refused) || len(asked) != 1 || asked[0] != tc.want {
			t.Errorf("%s %s %s: asked %v (%v), want %s", tc.arn, tc.region, tc.endpoint, asked, err, tc.want)
		}
	}
	// A partition whose endpoints Vigil does not know needs endpoint.
	err := send(t, snsChannel("arn:aws-iso:sns:us-iso-east-1:123456789012:ops", ""), downMessage(), snsSecrets)
	if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "set endpoint") {
		t.Errorf("Send to aws-iso without an endpoint = %v", err)
	}
	// The signature covers Host as net/http sends it: a default port
	// named in the endpoint is dropped from both.
	topic, _ := parseSNSTopic(snsStandardARN)
	for raw, want := range map[string]string{
		"https://sns.example.com:443":   "https://sns.example.com/",
		"http://sns.example.com:80/x":   "http://sns.example.com/x",
		"https://sns.example.com:8443/": "https://sns.example.com:8443/",
		"http://[::1]:80/":              "http://[::1]/",
	} {
		tgt, region, err := snsEndpoint(&v1.SNSChannel{Endpoint: raw}, topic)
		if err != nil || tgt.u.String() != want || region != snsRegionName {
			t.Errorf("snsEndpoint(%s) = %v %s %v, want %s", raw, tgt.u, region, err, want)
		}
	}
	for _, raw := range []string{"https://user:pw@sns.example.com/", "https://sns.example.com/?a=b", "sns.example.com"} {
		if _, _, err := snsEndpoint(&v1.SNSChannel{Endpoint: raw}, topic); err == nil || !IsPermanent(err) {
			t.Errorf("snsEndpoint(%s) = %v, want a permanent error", raw, err)
		}
	}
}

// A topic ARN or a region that is not one fails before anything is sent.
func TestSNSBadSettings(t *testing.T) {
	f := newFakeSNS(t, snsRegionName, snsStandardARN)
	for _, arn := range []string{
		"",
		"vigil-alerts",
		"arn:aws:sqs:eu-west-2:123456789012:vigil-alerts",
		"arn:aws:sns:eu-west-2:12345678901:vigil-alerts",
		"arn:aws:sns:eu-west-2:123456789012:vigil alerts",
		"arn:aws:sns:eu-west-2:123456789012:",
		"arn:aws:sns:-:123456789012:vigil-alerts",
		"arn:aws:sns:eu-west-2:123456789012:vigil-alerts.fifo.fifo",
		"arn:aws:sns:EU-WEST-2:123456789012:vigil-alerts",
		"arn:gcp:sns:eu-west-2:123456789012:vigil-alerts",
		"arn:aws:sns:eu-west-2:123456789012:" + strings.Repeat("t", 257),
	} {
		err := send(t, snsChannel(arn, f.URL), downMessage(), snsSecrets)
		if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "is not an SNS topic ARN") {
			t.Errorf("ARN %q: Send = %v", arn, err)
		}
	}
	ch := snsChannel(snsStandardARN, f.URL)
	ch.Spec.SNS.Region = "EU-WEST-2"
	if err := send(t, ch, downMessage(), snsSecrets); err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "is not an AWS region") {
		t.Errorf("region EU-WEST-2: Send = %v", err)
	}
	bad := map[string]string{"aws/accessKeyID": "AKIA BAD\n KEY", "aws/secretAccessKey": snsSecretKey}
	if err := send(t, snsChannel(snsStandardARN, f.URL), downMessage(), bad); err == nil || !IsPermanent(err) {
		t.Errorf("an access key id with spaces: Send = %v", err)
	}
	if f.requests != 0 {
		t.Errorf("the fake received %d requests", f.requests)
	}
}

func TestSNSSettings(t *testing.T) {
	err := send(t, testChannel(v1.ChannelSpec{Kind: v1.ChannelSNS}), downMessage(), nil)
	if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "the channel has no sns settings") {
		t.Errorf("Send without settings = %v", err)
	}
	// A missing key may be added: retried.
	err = send(t, snsChannel(snsStandardARN, "http://127.0.0.1:1"), downMessage(), map[string]string{"aws/accessKeyID": snsAccessKeyID})
	if err == nil || IsPermanent(err) || !strings.Contains(err.Error(), `Secret "aws" key "secretAccessKey"`) {
		t.Errorf("Send without a secret key = %v", err)
	}
	k, _ := Lookup(v1.ChannelSNS)
	spec := snsChannel(snsStandardARN, "").Spec
	if got := k.SecretRefs(&spec); !reflect.DeepEqual(got, []v1.SecretKeyRef{ref("aws", "accessKeyID"), ref("aws", "secretAccessKey")}) {
		t.Errorf("SecretRefs = %v", got)
	}
	if got := k.SecretRefs(&v1.ChannelSpec{Kind: v1.ChannelSNS}); got != nil {
		t.Errorf("SecretRefs without settings = %v", got)
	}
	if _, ok := k.(incidentTracker); ok || !Groups(v1.ChannelSNS) || Acknowledges(v1.ChannelSNS) {
		t.Error("sns is a fan-out: no tracker, grouped in storms, told no acknowledgement")
	}
}

// Every notice is published, each saying what it is; an acknowledgement
// is not.
func TestSNSNotices(t *testing.T) {
	f := newFakeSNS(t, snsRegionName, snsStandardARN)
	ch := snsChannel(snsStandardARN, f.URL)
	for _, tc := range []struct {
		notice  monitor.Notice
		status  string
		subject string
	}{
		{monitor.NoticeRealert, "down", "Nightly backup is still DOWN"},
		{monitor.NoticeFailure, "failure", "Nightly backup had a failed run (1 of 3 failures in a row)"},
		{monitor.NoticeMaintenanceStart, "maintenance", "Nightly backup is in maintenance (window nightly holds its notifications)"},
		{monitor.NoticeAck, "", ""},
	} {
		m := downMessage()
		m.Notice, m.Held = tc.notice, "nightly"
		if tc.notice == monitor.NoticeFailure {
			m.Detail = "1 of 3 failures in a row"
		}
		before := len(f.messages())
		mustSend(t, ch, m, snsSecrets)
		ps := f.messages()
		if tc.status == "" {
			if len(ps) != before {
				t.Errorf("%s: published %+v", tc.notice, ps[len(ps)-1])
			}
			continue
		}
		if len(ps) != before+1 {
			t.Fatalf("%s: nothing published", tc.notice)
		}
		p := ps[len(ps)-1]
		if p.Subject != tc.subject || p.Attributes["status"].Value != tc.status || p.Attributes["notice"].Value != string(tc.notice) {
			t.Errorf("%s: subject %q attributes %v", tc.notice, p.Subject, p.Attributes)
		}
	}
}

// The Channel's own subject is sanitized like the headline: printable
// ASCII, less than 100 characters.
func TestSNSTemplateSubject(t *testing.T) {
	f := newFakeSNS(t, snsRegionName, snsStandardARN)
	ch := snsChannel(snsStandardARN, f.URL)
	ch.Spec.Template = &v1.MessageTemplate{Subject: "⚠ $NAME — “$STATUS” à $NOW " + strings.Repeat("long ", 30)}
	m := downMessage()
	m.Check.Name = "Sauvegarde café"
	mustSend(t, ch, m, snsSecrets)
	p := f.only(t)
	if !strings.HasPrefix(p.Subject, `? Sauvegarde cafe - "down" a 2024-05-01T12:00:00+00:00 long long`) || !strings.HasSuffix(p.Subject, "long...") || len(p.Subject) > 99 {
		t.Errorf("subject %q", p.Subject)
	}
}

// A message SNS would refuse as too long is cut to fit with its
// attributes in 256 KB; characters XML cannot carry are replaced.
func TestSNSMessageBounded(t *testing.T) {
	f := newFakeSNS(t, snsRegionName, snsStandardARN)
	m := downMessage()
	m.Text = strings.Repeat("é", 200_000) // 400,000 bytes
	m.Check.LastPingBody = []byte("a\x00b\x1bc\xffd")
	mustSend(t, snsChannel(snsStandardARN, f.URL), m, snsSecrets)
	p := f.only(t)
	size := len(p.Message) + len(p.Subject)
	for name, a := range p.Attributes {
		size += len(name) + len(a.DataType) + len(a.Value)
	}
	if size > snsMessageMax || size < snsMessageMax-64 || !strings.HasSuffix(p.Message, "é\n[truncated]") {
		t.Errorf("message of %d bytes (%d with the attributes), ending %q", len(p.Message), size, p.Message[len(p.Message)-20:])
	}
	m.Text = ""
	mustSend(t, snsChannel(snsStandardARN, f.URL), m, snsSecrets)
	if ps := f.messages(); !strings.Contains(ps[1].Message, "Last ping body:\na\uFFFDb\uFFFDc\uFFFDd") {
		t.Errorf("message %q", ps[1].Message)
	}
}

func TestSNSSubject(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Nightly backup is DOWN", "Nightly backup is DOWN"},
		{"[Test] “backup” is UP (was down for 2 hours)", `[Test] "backup" is UP (was down for 2 hours)`},
		{"Sauvegarde nocturne – café crème is DOWN", "Sauvegarde nocturne - cafe creme is DOWN"},
		{"Ｆｕｌｌｗｉｄｔｈ ﬁle…", "Fullwidth file..."},
		{"備份 is DOWN", "? is DOWN"},
		{"backup 🚀🔥 is DOWN", "backup ? is DOWN"},
		{"line\nbreak\r\tand\x00nul", "line break and nul"},
		{"   leading spaces", "leading spaces"},
		{"$NAME <x> is DOWN", "NAME <x> is DOWN"},
		{"<script>", "script>"},
		{"zero\u200bwidth", "zerowidth"},
		{"", "Vigil notification"},
		{"\n\t ", "Vigil notification"},
		{"+++", "Vigil notification"},
		{"\xff\xfe bad utf-8", "? bad utf-8"},
		{strings.Repeat("word ", 30), strings.Repeat("word ", 18) + "word..."},
		{strings.Repeat("x", 150), strings.Repeat("x", 96) + "..."},
	} {
		if got := snsSubject(tc.in); got != tc.want {
			t.Errorf("snsSubject(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzSNSSubject: whatever the title, the Subject is one SNS takes.
func FuzzSNSSubject(f *testing.F) {
	for _, s := range []string{"Nightly backup is DOWN", "“x” — é", "備份", "\x00\n", strings.Repeat("ab ", 60), "$$$ a", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, title string) {
		s := snsSubject(title)
		if s == "" || len(s) >= 100 {
			t.Fatalf("snsSubject(%q) = %q: %d characters", title, s, len(s))
		}
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] > 0x7e {
				t.Fatalf("snsSubject(%q) = %q holds %q", title, s, s[i])
			}
		}
		if c := rune(s[0]); !unicode.IsLetter(c) && !unicode.IsDigit(c) && !unicode.IsPunct(c) {
			t.Fatalf("snsSubject(%q) = %q starts with %q", title, s, c)
		}
		if strings.Contains(s, "  ") || s != strings.TrimSpace(s) {
			t.Fatalf("snsSubject(%q) = %q: spaces", title, s)
		}
	})
}
