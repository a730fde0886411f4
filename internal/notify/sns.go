package notify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"golang.org/x/text/unicode/norm"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/words"
)

func init() { register(v1.ChannelSNS, snsKind{}) }

// snsKind publishes to an Amazon SNS topic through the Query API's Publish
// action (https://docs.aws.amazon.com/sns/latest/api/API_Publish.html): a
// form-encoded POST to https://sns.<region>.amazonaws.com/ (or the
// Channel's endpoint) with Action=Publish, Version=2010-03-31, TopicArn,
// Subject (the short title as SNS takes it: printable ASCII, at most 99
// characters, see snsSubject), Message (the message as plain text: title,
// reason, facts, last ping body excerpt, link; at most 256 KiB with the
// attributes) and MessageAttributes that subscriptions can filter on:
// status (down, up, failure, maintenance, sla, flapping), notice (realert,
// escalation, ... when set), namespace, check (the Check object's name),
// check_uuid, tags (a String.Array) and test ("true" for a test). To a
// FIFO topic (its name ends in .fifo) it adds MessageGroupId, one per check
// ("vigil-<check uuid>"), so a check's messages keep their order, and
// MessageDeduplicationId, the same for every attempt to deliver one
// notification (chatNotificationKey), so SNS drops a retry of a publish
// that went through (within its five-minute window).
//
// SNS is a fan-out, not an incident tracker: downs, ups and every notice
// (re-alert, escalation, failure, maintenance, SLA, flapping) are published
// alike, each title saying what happened, and storms are grouped.
//
// Requests are signed with Signature Version 4 (service "sns", the
// region) by the AWS SDK's own signer, github.com/aws/aws-sdk-go-v2's
// aws/signer/v4: the reference implementation, kept by AWS, and a small
// module (it needs only smithy-go), where the SNS service client would add
// a dozen modules, its own HTTP stack and credential chain for one call;
// the request itself still goes through d.do and the egress guard like
// every kind's. A signer is made for each delivery: the SDK's keeps the
// signing key it derived under the access key id alone, so a shared one
// would go on signing with an old secret key for the rest of the day after
// the Secret was corrected. The credentials come from the Channel's Secret
// (accessKeyID, secretAccessKey, and sessionToken for temporary ones): the
// manager's own AWS identity is never used, so a Channel can publish only
// as the identity its author holds keys of.
//
// SNS answers 200 with a PublishResponse (any 2xx is success) and errors
// as an ErrorResponse in XML, whose Code and Message the error shows.
// Throttling (HTTP 400 with a throttling code), a request that expired
// (a clock out of step, which may be put right) and 5xx are retried; any
// other 4xx (SignatureDoesNotMatch, InvalidClientTokenId,
// AuthorizationError, NotFound, InvalidParameter, KMS errors) is permanent.
type snsKind struct{}

func (snsKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.SNS == nil {
		return nil
	}
	// The session token is optional: the Channel is ready without it.
	name := spec.SNS.CredentialsSecretRef.Name
	return []v1.SecretKeyRef{{Name: name, Key: "accessKeyID"}, {Name: name, Key: "secretAccessKey"}}
}

// SNS's limits.
const (
	// snsSubjectMax bounds the Subject: SNS takes "less than 100
	// characters", printable ASCII.
	snsSubjectMax = 99
	// snsPayloadMax bounds a message with its attributes, in bytes.
	snsPayloadMax = 256 << 10
	// snsIDMax bounds MessageGroupId and MessageDeduplicationId.
	snsIDMax = 128
	// snsBodyLimit bounds the last ping body excerpt, as an email's: SNS
	// subscriptions are mostly email addresses and queues.
	snsBodyLimit = emailBodyLimit
)

// snsTopicARN is a topic's ARN: partition, region, account, name (a FIFO
// topic's ending in .fifo), as the CRD checks it.
var snsTopicARN = regexp.MustCompile(`^arn:(aws[a-z-]*):sns:([a-z0-9]+(?:-[a-z0-9]+)+):[0-9]{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$`)

// snsRegion is a region's name, which goes into the endpoint's host name.
var snsRegion = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)+$`)

// snsPartitionDomains are the domains of SNS's endpoints in the partitions
// whose endpoints are sns.<region>.<domain>; a topic of another partition
// needs the Channel's endpoint.
var snsPartitionDomains = map[string]string{
	"aws":        "amazonaws.com",
	"aws-us-gov": "amazonaws.com",
	"aws-cn":     "amazonaws.com.cn",
}

// snsTopic is what a topic's ARN says.
type snsTopic struct {
	arn, partition, region string
	fifo                   bool
}

func parseSNSTopic(arn string) (snsTopic, error) {
	m := snsTopicARN.FindStringSubmatch(arn)
	if m == nil {
		return snsTopic{}, Permanent(fmt.Errorf("%q is not an SNS topic ARN (arn:aws:sns:<region>:<account>:<topic>)", words.Clip(arn, 600)))
	}
	return snsTopic{arn: arn, partition: m[1], region: m[2], fifo: m[3] != ""}, nil
}

// snsEndpoint is where a channel's requests go, and the region they are
// signed for: the Channel's endpoint and region when set, else the
// topic's region's endpoint in its partition.
func snsEndpoint(s *v1.SNSChannel, topic snsTopic) (target, string, error) {
	region := topic.region
	if s.Region != "" {
		region = s.Region
	}
	if !snsRegion.MatchString(region) {
		return target{}, "", Permanent(fmt.Errorf("%q is not an AWS region", region))
	}
	raw := s.Endpoint
	if raw == "" {
		domain, ok := snsPartitionDomains[topic.partition]
		if !ok {
			return target{}, "", Permanent(fmt.Errorf("the topic is in the %s partition, whose SNS endpoint Vigil does not know: set endpoint", topic.partition))
		}
		raw = "https://sns." + region + "." + domain + "/"
	}
	t, err := parseTarget(raw, false)
	if err != nil {
		return target{}, "", err
	}
	if t.u.RawQuery != "" || t.u.User != nil || t.u.Fragment != "" {
		return target{}, "", Permanent(errors.New("the SNS endpoint must have no user, query or fragment"))
	}
	// The signature covers the Host header as sent: net/http sends the
	// port as the URL names it, and the signer drops a default one.
	if p := t.u.Port(); (p == "443" && t.u.Scheme == "https") || (p == "80" && t.u.Scheme == "http") {
		t.u.Host = strings.TrimSuffix(t.u.Host, ":"+p)
	}
	return t, region, nil
}

func (snsKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.SNS
	if s == nil {
		return Permanent(errors.New("the channel has no sns settings"))
	}
	topic, err := parseSNSTopic(s.TopicARN)
	if err != nil {
		return err
	}
	t, region, err := snsEndpoint(s, topic)
	if err != nil {
		return err
	}
	creds, err := d.snsCredentials(ctx, s)
	if err != nil {
		return err
	}
	body := []byte(snsPublishForm(&d, topic).Encode())
	h, err := snsSign(ctx, t, body, creds, region)
	if err != nil {
		return err
	}
	return d.do(ctx, request{method: http.MethodPost, target: t, header: h, body: body, judge: snsJudge})
}

// snsCredentials reads the access key from the Channel's Secret.
func (d *Delivery) snsCredentials(ctx context.Context, s *v1.SNSChannel) (aws.Credentials, error) {
	refs := snsKind{}.SecretRefs(&d.Channel.Spec)
	id, err := d.secret(ctx, refs[0])
	if err != nil {
		return aws.Credentials{}, err
	}
	key, err := d.secret(ctx, refs[1])
	if err != nil {
		return aws.Credentials{}, err
	}
	token, err := d.optionalSecret(ctx, v1.SecretKeyRef{Name: s.CredentialsSecretRef.Name, Key: "sessionToken"})
	if err != nil {
		return aws.Credentials{}, err
	}
	// The id and the token go into headers; the key only into the HMAC.
	if !snsCredential(id) || !validHeaderValue(token) {
		return aws.Credentials{}, Permanent(errors.New("the AWS access key id or session token holds characters a credential cannot have"))
	}
	return aws.Credentials{AccessKeyID: id, SecretAccessKey: key, SessionToken: token}, nil
}

// snsCredential reports whether an access key id can be one: letters and
// digits (AKIA..., ASIA...).
func snsCredential(id string) bool {
	for _, c := range id {
		if c > unicode.MaxASCII || (!unicode.IsLetter(c) && !unicode.IsDigit(c)) {
			return false
		}
	}
	return id != ""
}

// snsSign signs a Publish request with SigV4 and returns the headers to
// send it with: Content-Type, X-Amz-Date, X-Amz-Security-Token (with a
// session token) and Authorization. The signature covers those (but
// Authorization), Host and Content-Length, as d.do sends them; d.do adds
// User-Agent, which SigV4 leaves out.
func snsSign(ctx context.Context, t target, body []byte, creds aws.Credentials, region string) (http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, Permanent(fmt.Errorf("POST %s: building the request failed", t))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "sns", region, now()); err != nil {
		return nil, Permanent(fmt.Errorf("signing the request: %w", err))
	}
	h := http.Header{}
	for _, k := range []string{"Content-Type", "X-Amz-Date", "X-Amz-Security-Token", "Authorization"} {
		if v := req.Header.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	return h, nil
}

// snsAttribute is one message attribute.
type snsAttribute struct {
	name, dataType, value string
}

// snsPublishForm is the Publish request's parameters.
func snsPublishForm(d *Delivery, topic snsTopic) url.Values {
	m := &d.Message
	subject := snsSubject(m.shortTitle())
	attrs := snsAttributes(m)
	room := snsPayloadMax - len(subject)
	for _, a := range attrs {
		room -= len(a.name) + len(a.dataType) + len(a.value)
	}
	form := url.Values{
		"Action":   {"Publish"},
		"Version":  {"2010-03-31"},
		"TopicArn": {topic.arn},
		"Subject":  {subject},
		"Message":  {snsMessage(m, room)},
	}
	for i, a := range attrs {
		p := "MessageAttributes.entry." + strconv.Itoa(i+1) + "."
		form.Set(p+"Name", a.name)
		form.Set(p+"Value.DataType", a.dataType)
		form.Set(p+"Value.StringValue", a.value)
	}
	if topic.fifo {
		form.Set("MessageGroupId", snsID(incidentKey(m)))
		form.Set("MessageDeduplicationId", "vigil-"+chatNotificationKey(d))
	}
	return form
}

// snsAttributes are what subscriptions' filter policies can match: the
// status, the notice, the namespace, the check and its tags, a test mark.
// Empty values are left out (SNS refuses them).
func snsAttributes(m *Message) []snsAttribute {
	var out []snsAttribute
	add := func(name, dataType, value string) {
		if value = snsText(value); value != "" {
			out = append(out, snsAttribute{name, dataType, value})
		}
	}
	add("status", "String", m.status())
	add("notice", "String", string(m.Notice))
	add("namespace", "String", m.Check.Namespace)
	if m.Group == nil {
		add("check", "String", m.Check.Object)
		add("check_uuid", "String", m.Check.UUID)
		if len(m.Check.Tags) > 0 {
			tags, _ := json.Marshal(m.Check.Tags)
			add("tags", "String.Array", string(tags))
		}
	}
	if m.Test {
		add("test", "String", "true")
	}
	return out
}

// snsMessage is the message as plain text, at most limit bytes.
func snsMessage(m *Message, limit int) string {
	text := snsText(m.plainText(snsBodyLimit))
	if len(text) > limit {
		text, _ = words.Cut(text, limit-len("\n[truncated]"))
		text += "\n[truncated]"
	}
	return text
}

// snsText keeps only the characters SNS takes in a message or an
// attribute (XML's): valid UTF-8 without control characters other than
// tab and line breaks; the others become U+FFFD.
func snsText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20, r >= 0xD800 && r <= 0xDFFF, r == 0xFFFE, r == 0xFFFF:
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// snsID bounds an id to what MessageGroupId takes: at most 128 characters
// (a longer one is hashed).
func snsID(id string) string {
	if len(id) <= snsIDMax {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "vigil-" + hex.EncodeToString(sum[:16])
}

// snsASCII are the characters outside ASCII that titles often hold, as
// ASCII; norm.NFKD takes care of accents, ligatures and the like.
var snsASCII = strings.NewReplacer(
	"\u2018", "'", "\u2019", "'", "\u201a", "'", "\u201b", "'",
	"\u201c", `"`, "\u201d", `"`, "\u201e", `"`, "\u201f", `"`,
	"\u00ab", `"`, "\u00bb", `"`, "\u2039", "'", "\u203a", "'",
	"\u2010", "-", "\u2011", "-", "\u2012", "-", "\u2013", "-", "\u2014", "-", "\u2015", "-", "\u2212", "-",
	"\u2022", "*", "\u00b7", "*", "\u00d7", "x",
)

// snsSubject makes a title a Subject SNS takes: printable ASCII (accents
// dropped, typographic quotes and dashes made plain, any other character
// "?"), on one line, starting with a letter, a digit or a punctuation
// mark (leading symbols are dropped), at most snsSubjectMax characters (cut at a word with "..." when
// longer). A title with nothing left is "Vigil notification".
func snsSubject(title string) string {
	s := norm.NFKD.String(snsASCII.Replace(strings.ToValidUTF8(title, "?")))
	var b strings.Builder
	unknown := false
	for _, r := range s {
		switch {
		case r >= '!' && r <= '~':
			b.WriteRune(r)
			unknown = false
		case unicode.IsSpace(r) || unicode.IsControl(r):
			b.WriteByte(' ')
			unknown = false
		case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Cf, r):
			// A combining accent, a zero-width joiner: nothing.
		case !unknown:
			b.WriteByte('?')
			unknown = true
		}
	}
	// Spaces collapse, and what leads is a letter, a digit or a
	// punctuation mark, as SNS wants: not a space, not a symbol ("$", "<").
	s = strings.TrimLeftFunc(strings.Join(strings.Fields(b.String()), " "), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsPunct(r)
	})
	if len(s) > snsSubjectMax {
		s = s[:snsSubjectMax-len("...")]
		if i := strings.LastIndexByte(s, ' '); i > snsSubjectMax/2 {
			s = s[:i]
		}
		s = strings.TrimRight(s, " ") + "..."
	}
	if s == "" {
		return "Vigil notification"
	}
	return s
}

// snsRetryable are the error codes of a 4xx answer that a later attempt
// may get past: throttling, and a request that expired or came with a
// clock out of step (the clock may be put right).
var snsRetryable = map[string]bool{
	"Throttling": true, "ThrottlingException": true, "ThrottledException": true,
	"RequestThrottledException": true, "TooManyRequestsException": true, "RequestLimitExceeded": true,
	"KMSThrottling": true, "RequestTimeout": true, "RequestTimeoutException": true,
	"RequestExpired": true, "RequestTimeTooSkewed": true,
}

// snsJudge reads an SNS error's Code and Message into the error, and
// retries the 4xx codes that snsRetryable names; the status decides the
// rest (5xx retried, other 4xx permanent).
func snsJudge(se *StatusError, excerpt string) error {
	if se.Code < 400 {
		return byStatus(se)
	}
	code, msg := snsErrorOf(excerpt)
	if code == "" {
		return byStatus(se)
	}
	se.Body = code
	if msg != "" {
		se.Body += ": " + oneLine(msg, maxErrorBody)
	}
	if snsRetryable[code] {
		return se
	}
	return byStatus(se)
}

// snsErrorCode is the shape of an AWS error code.
var snsErrorCode = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.]{0,63}$`)

// snsErrorOf reads the Code and Message of an ErrorResponse
// (<ErrorResponse><Error><Type/><Code/><Message/></Error></ErrorResponse>),
// as much of it as the excerpt holds: a cut one still gives its code.
func snsErrorOf(excerpt string) (code, msg string) {
	dec := xml.NewDecoder(strings.NewReader(excerpt))
	dec.Strict = false
	var path []string
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			path = append(path, tok.Name.Local)
		case xml.EndElement:
			if len(path) > 0 {
				path = path[:len(path)-1]
			}
		case xml.CharData:
			switch strings.Join(path, "/") {
			case "ErrorResponse/Error/Code":
				code += string(tok)
			case "ErrorResponse/Error/Message":
				msg += string(tok)
			}
		}
	}
	if code = strings.TrimSpace(code); !snsErrorCode.MatchString(code) {
		return "", ""
	}
	return code, strings.TrimSpace(msg)
}
