package notify

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func init() { register(v1.ChannelSignal, signalKind{}) }

// signalKind sends a Signal message through a signal-cli REST API server
// (bbernhard/signal-cli-rest-api): a POST to <url>/v2/send of {message,
// number (the registered sender), recipients, text_mode "styled"}, with a
// bearer token when the channel has one. The message is the title in bold,
// the reason, the facts with bold labels, the last ping body in monospace
// and the link; Signal's markers in the check's own text are escaped. The
// server takes phone numbers (and account UUIDs), usernames and one group
// per request and never mixes them, so the recipients go in one request
// for the numbers, one for the usernames and one per group; should one
// fail, a retry sends the others again. Every event is sent, each worded by
// its title; nothing is left to resolve.
//
// The server answers 400 to almost every failure, a rate limit or a
// network failure as much as a bad request, so a failure is judged by the
// error it words (signalJudge): rate limits and network failures are
// retried; an unregistered or untrusted recipient, an unregistered sender
// or a malformed request is not.
type signalKind struct{}

func (signalKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Signal == nil {
		return nil
	}
	return optional(spec.Signal.TokenSecretRef)
}

// signalSendV2 is the body of POST /v2/send.
type signalSendV2 struct {
	Message    string   `json:"message"`
	Number     string   `json:"number"`
	Recipients []string `json:"recipients"`
	// TextMode "styled" reads **bold**, *italic*, `monospace`, ~strike~
	// and ||spoiler|| markers; a backslash escapes one.
	TextMode string `json:"text_mode"`
}

// signalMessageMax bounds a message, in UTF-16 code units (Signal's
// count): Signal sends a longer text as an attachment.
const signalMessageMax = 2000

func (signalKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.Signal
	if s == nil {
		return Permanent(errors.New("the channel has no signal settings"))
	}
	t, err := parseTarget(s.URL, false)
	if err != nil {
		return err
	}
	t = joinTargetPath(t, "v2", "send")
	batches := signalBatches(s.Recipients)
	if len(batches) == 0 {
		return Permanent(errors.New("the signal channel has no recipients"))
	}
	h := http.Header{}
	if err := d.setBearer(ctx, h, s.TokenSecretRef, "the signal token"); err != nil {
		return err
	}
	text := signalText(&d.Message)
	for _, recipients := range batches {
		body := signalSendV2{Message: text, Number: s.Number, Recipients: recipients, TextMode: "styled"}
		if err := d.do(ctx, request{method: http.MethodPost, target: t, header: h, json: body, judge: signalJudge}); err != nil {
			return err
		}
	}
	return nil
}

// signalAccountUUID is an account's UUID, which the server takes as it
// takes a phone number.
var signalAccountUUID = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// signalBatches splits the recipients into the requests the server takes:
// the phone numbers and UUIDs together, the usernames together, and each
// group ("group.<id>") on its own; duplicates and blanks are dropped.
func signalBatches(recipients []string) [][]string {
	var numbers, usernames []string
	var groups [][]string
	seen := map[string]bool{}
	for _, r := range recipients {
		r = strings.TrimSpace(r)
		if r == "" || seen[r] {
			continue
		}
		seen[r] = true
		switch {
		case strings.HasPrefix(r, "group."):
			groups = append(groups, []string{r})
		case strings.HasPrefix(r, "+") || signalAccountUUID.MatchString(r):
			numbers = append(numbers, r)
		default:
			usernames = append(usernames, r)
		}
	}
	var out [][]string
	for _, b := range [][]string{numbers, usernames} {
		if len(b) > 0 {
			out = append(out, b)
		}
	}
	return append(out, groups...)
}

// signalText is the message in Signal's styled text, within
// signalMessageMax.
func signalText(m *Message) string {
	if text, ok := fitWithExcerpt(func(n int) string { return signalStyled(m, n) }, signalMessageMax, utf16Len); ok {
		return text
	}
	// Too long without the excerpt (a long description, a long template
	// text): plain text, cut short, with every marker escaped.
	return ellipsizeUTF16(signalEscape(m.plainText(0)), signalMessageMax)
}

// signalStyled is the message with bold title and labels, and verbatim
// values and body excerpt in monospace.
func signalStyled(m *Message, bodyLimit int) string {
	esc := signalEscape
	var b strings.Builder
	b.WriteString("**" + esc(m.title()) + "**")
	if l := m.reasonLine(); l != "" {
		b.WriteString("\n" + esc(l))
	}
	b.WriteString("\n")
	for _, f := range m.facts() {
		v := esc(f.Value)
		if f.Code {
			v = "`" + v + "`"
		}
		b.WriteString("\n**" + esc(f.Title) + ":** " + v)
	}
	if body := m.Check.bodyExcerpt(bodyLimit); bodyLimit > 0 && body != "" {
		b.WriteString("\n\n**Last ping body:**\n`" + esc(body) + "`")
	}
	if u := m.Check.DetailsURL; u != "" {
		b.WriteString("\n\n" + esc(u))
	}
	return b.String()
}

// signalEscape escapes the markers of Signal's styled text (* ` ~ |) with
// a backslash. The server has no escape for a backslash itself, so a text
// ending in one, which would escape the marker after it, ends with a zero
// width space.
func signalEscape(s string) string {
	s = signalMarkers.Replace(s)
	if strings.HasSuffix(s, `\`) {
		s += "\u200b"
	}
	return s
}

var signalMarkers = strings.NewReplacer("*", `\*`, "`", "\\`", "~", `\~`, "|", `\|`)

// signalFailure is what the error of a failed send says of retrying it.
type signalFailure int

const (
	// signalUnrecognised: the error says nothing Vigil knows; the status
	// code decides, as for every other kind.
	signalUnrecognised signalFailure = iota
	// signalRateLimited: Signal refused to send so much; a later try may
	// pass.
	signalRateLimited
	// signalTransient: the server, or Signal's service behind it, could
	// not be reached; a later try may pass.
	signalTransient
	// signalPermanent: the sender, a recipient or the request itself is
	// wrong, and stays so until someone changes it.
	signalPermanent
)

// The words that classify an error of the REST API (its own, or
// signal-cli's, which it passes on), in lower case. Sources: the REST API's
// src/api/api.go and src/client (bbernhard/signal-cli-rest-api), and
// signal-cli's SendCommand and SendMessageResultUtils (AsamK/signal-cli).
var (
	signalRateLimitWords = []string{
		"rate limit",     // "[429] Rate limit exceeded", "… due to rate limiting", "Rate limit failure for …"
		"ratelimit",      // "(RateLimitException)"
		"proof required", // "CAPTCHA proof required for sending to …, or wait "N" seconds"
		"too many requests",
		"[413]", "[428]", "[429]", // the Signal service's answers to a sender sending too much
	}
	signalTransientWords = []string{
		"network failure", // a recipient's "Network failure for …"
		"unable to connect",
		"no connection",
		"connection refused",
		"connection reset",
		"timed out",
		"timeout", // "process killed as timeout reached", "(SocketTimeoutException)"
		"pushnetworkexception",
		"unknownhostexception",
		"connectexception",
		"service unavailable",
	}
	signalPermanentWords = []string{
		"unregistered user",        // a recipient's "Unregistered user …"
		"is not registered",        // "The user … is not registered.", and the sender's "User … is not registered."
		"untrusted identit",        // "Untrusted Identity for …", "… due to untrusted identities"
		"untrusted recipient keys", // the REST API's words for the same, in json-rpc mode
		"authorization failed",     // "[401]": the sender's account was unregistered or unlinked
		"invalid phone number",
		"invalid number",
		"invalid account",
		"invalid identifier",
		"invalid recipient",
		"invalid group id",
		"invalid signal group size",
		"invalid username",
		"group not found",
		"not a member in group",
		"not allowed to send message to group",
		"please first update your profile",
		"specified account does not exist",
		"failed to load the given account",
		"number not registered with json-rpc",
		"couldn't process request", // the REST API's check of the request's shape
		"cannot be specified together",
		"more than one group",
		"more than one recipient",
	}
	// signalServerError is a 5xx answer of the Signal service, as
	// signal-cli quotes it ("[503] …").
	signalServerError = regexp.MustCompile(`\[5[0-9][0-9]\]`)
	// signalRetryHint is a delay signal-cli passes on: "retry after 30
	// seconds", or "or wait "600" seconds" (quoted, and escaped in JSON).
	signalRetryHint = regexp.MustCompile(`(?:retry after|wait)\W{0,3}([0-9]{1,9})\W{0,3}second`)
)

// signalBareFailure is all signal-cli says, in json-rpc mode, when a send
// reached none of its recipients for another reason than a rate limit or
// an untrusted key: mostly a network failure, so it is retried (an
// unregistered recipient then costs a few needless attempts).
const signalBareFailure = "failed to send message"

// signalRateLimitWait is the delay after a rate limit whose answer names
// none: Signal does not say how long its limits last, and a retry within
// seconds only counts against the same limit.
const signalRateLimitWait = time.Minute

// signalJudge turns a failed send into a retryable or a permanent error by
// what its error says, since the REST API answers 400 to almost every
// failure and 429 only to some rate limits. A rate limit waits for the
// delay the answer names (signalRateLimitWait when it names none); an
// error it does not recognise is judged by its status code, as before.
func signalJudge(se *StatusError, excerpt string) error {
	if se.Code != http.StatusBadRequest && se.Code != http.StatusTooManyRequests {
		return byStatus(se)
	}
	text := strings.ToLower(signalErrorText(excerpt))
	failure := signalClassify(text)
	if se.Code == http.StatusTooManyRequests {
		failure = signalRateLimited
	}
	switch failure {
	case signalRateLimited:
		if se.RetryAfter == 0 {
			se.RetryAfter = cmp.Or(signalRetryAfter(text), signalRateLimitWait)
		}
		return se
	case signalTransient:
		return se
	case signalPermanent:
		return Permanent(se)
	}
	return byStatus(se)
}

// signalErrorText is the "error" of the REST API's JSON answer
// ({"error": "…"}), or the excerpt as it is when it holds none (cut short,
// or not JSON).
func signalErrorText(excerpt string) string {
	var answer struct {
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(excerpt), &answer) == nil && answer.Error != "" {
		return answer.Error
	}
	return excerpt
}

// signalClassify reads an error in lower case. A rate limit or a network
// failure outweighs a permanent failure in the same error: signal-cli
// lists every recipient's failure, and a retry reaches the recipients
// that failed for the time being.
func signalClassify(text string) signalFailure {
	switch {
	case containsAny(text, signalRateLimitWords):
		return signalRateLimited
	case containsAny(text, signalTransientWords) || signalServerError.MatchString(text):
		return signalTransient
	case containsAny(text, signalPermanentWords):
		return signalPermanent
	case strings.TrimRight(strings.TrimSpace(text), ".") == signalBareFailure:
		return signalTransient
	}
	return signalUnrecognised
}

// signalRetryAfter is the longest delay the error names, at most a day
// (more is a mistake); zero when it names none.
func signalRetryAfter(text string) time.Duration {
	const maxSecs = 24 * 60 * 60
	secs := 0
	for _, m := range signalRetryHint.FindAllStringSubmatch(text, -1) {
		if n, err := strconv.Atoi(m[1]); err == nil {
			secs = max(secs, min(n, maxSecs))
		}
	}
	return time.Duration(secs) * time.Second
}

// containsAny reports whether s contains any of words.
func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}
