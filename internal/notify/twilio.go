package notify

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/words"
)

// The Twilio kinds: text messages, WhatsApp messages and voice calls, all
// through Twilio's REST API (version 2010-04-01) with one account's
// credentials, from one of its numbers to one number.
func init() {
	register(v1.ChannelSMS, smsKind{})
	register(v1.ChannelWhatsApp, whatsAppKind{})
	register(v1.ChannelCall, callKind{})
}

// TwilioAPIURL is the base of Twilio's REST API, used when a channel sets
// no URL.
const TwilioAPIURL = "https://api.twilio.com"

// Twilio's limits.
const (
	// twilioBodyMax is the longest message Body Twilio accepts, in
	// characters (counted here in UTF-16 code units, as a text message
	// encodes them, so that no count of Twilio's comes out longer).
	twilioBodyMax = 1600
	// twilioTwiMLMax is the longest Twiml parameter of a call.
	twilioTwiMLMax = 4000
	// callSpokenMax bounds the sentence a call speaks, in characters: a
	// call is for waking someone, the details are elsewhere. Escaped, it
	// stays well within twilioTwiMLMax.
	callSpokenMax = 400
)

// twilioAccountSID is the shape of an Account SID, checked before it goes
// into a URL path.
var twilioAccountSID = regexp.MustCompile(`^AC[0-9a-fA-F]{32}$`)

// twilioSecretRefs lists the keys of a Twilio channel's credentials Secret.
func twilioSecretRefs(s *v1.TwilioChannel) []v1.SecretKeyRef {
	if s == nil {
		return nil
	}
	name := s.CredentialsSecretRef.Name
	return []v1.SecretKeyRef{{Name: name, Key: "accountSID"}, {Name: name, Key: "authToken"}}
}

// twilioPost creates a resource of the channel's account ("Messages.json",
// "Calls.json"): a form-encoded POST to
// <base>/2010-04-01/Accounts/<AccountSid>/<resource>, with HTTP basic
// authentication as AccountSid:AuthToken. Twilio answers 201 Created.
func (d *Delivery) twilioPost(ctx context.Context, s *v1.TwilioChannel, resource string, form url.Values) error {
	t, err := parseTarget(cmp.Or(s.URL, TwilioAPIURL), false)
	if err != nil {
		return err
	}
	refs := twilioSecretRefs(s)
	sid, err := d.secret(ctx, refs[0])
	if err != nil {
		return err
	}
	if !twilioAccountSID.MatchString(sid) {
		return Permanent(fmt.Errorf(`secret %q key "accountSID" is not a Twilio Account SID ("AC" and 32 hexadecimal digits)`, refs[0].Name))
	}
	token, err := d.secret(ctx, refs[1])
	if err != nil {
		return err
	}
	basic := base64.StdEncoding.EncodeToString([]byte(sid + ":" + token))
	// A server that echoes the request in its error must not show the
	// encoded credentials either.
	d.redactDerived(basic)
	h := http.Header{}
	h.Set("Authorization", "Basic "+basic)
	t = joinTargetPath(t, "2010-04-01", "Accounts", sid, resource)
	return d.do(ctx, request{method: http.MethodPost, target: t, header: h, form: form})
}

// smsKind sends a text message through Twilio's Messages API: From, To and
// a Body of one or two lines, the title and the reason ("“backup” is DOWN.
// Reason: …."), then the link to the check's page when the whole fits in
// Twilio's 1,600 characters. Every event is sent, each worded by its title:
// downs and ups, re-alerts and escalations ("is still DOWN"), failure
// notices ("had a failed run") and maintenance notices. Nothing is left to
// resolve.
type smsKind struct{}

func (smsKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	return twilioSecretRefs(spec.SMS)
}

func (smsKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.SMS
	if s == nil {
		return Permanent(errors.New("the channel has no sms settings"))
	}
	form := url.Values{"From": {s.From}, "To": {s.To}, "Body": {smsText(&d.Message)}}
	return d.twilioPost(ctx, s, "Messages.json", form)
}

// smsText is the short text, with the link on a line of its own when it
// fits.
func smsText(m *Message) string {
	text := m.shortText()
	if u := m.Check.DetailsURL; u != "" && utf16Len(text)+1+utf16Len(u) <= twilioBodyMax {
		return text + "\n" + u
	}
	return ellipsizeUTF16(text, twilioBodyMax)
}

// whatsAppKind sends a WhatsApp message through Twilio's Messages API, from
// and to "whatsapp:<number>". WhatsApp delivers a message that a business
// starts only when it is an approved template: for a down flip, a re-alert
// or an escalation the channel's DownContentSID, for an up flip its
// UpContentSID, sent as ContentSid with ContentVariables {"1": "<check
// name>"} ("[Test] <name>" for a test). Any other message (no template set
// for the event, a failure notice, a maintenance notice) is sent as free
// text, which WhatsApp delivers only within 24 hours of the recipient's last
// message: the title, the reason, the facts, the last ping body and the
// link, within Twilio's 1,600 characters. Nothing is left to resolve.
type whatsAppKind struct{}

func (whatsAppKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.WhatsApp == nil {
		return nil
	}
	return twilioSecretRefs(&spec.WhatsApp.TwilioChannel)
}

func (whatsAppKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.WhatsApp
	if s == nil {
		return Permanent(errors.New("the channel has no whatsapp settings"))
	}
	m := &d.Message
	form := url.Values{"From": {"whatsapp:" + s.From}, "To": {"whatsapp:" + s.To}}
	if sid := whatsAppContentSID(s, m); sid != "" {
		vars, err := json.Marshal(map[string]string{"1": whatsAppVariable(m.testPrefix() + m.Check.name())})
		if err != nil {
			return Permanent(fmt.Errorf("encoding the content variables: %w", err))
		}
		form.Set("ContentSid", sid)
		form.Set("ContentVariables", string(vars))
	} else {
		form.Set("Body", whatsAppText(m))
	}
	return d.twilioPost(ctx, &s.TwilioChannel, "Messages.json", form)
}

// whatsAppContentSID is the template of the message's event, or "" when
// it is sent as free text.
func whatsAppContentSID(s *v1.WhatsAppChannel, m *Message) string {
	switch {
	case m.aside():
		return ""
	case m.Up:
		return s.UpContentSID
	}
	return s.DownContentSID
}

// whatsAppVariable makes a template variable of s: WhatsApp refuses
// variables with new lines, tabs or runs of spaces.
func whatsAppVariable(s string) string {
	return words.Ellipsize(strings.Join(strings.Fields(s), " "), 200)
}

// whatsAppText is the free-text message: the plain text, its body excerpt
// shortened as needed to fit Twilio's limit.
func whatsAppText(m *Message) string {
	if text, ok := fitWithExcerpt(m.plainText, twilioBodyMax, utf16Len); ok {
		return text
	}
	return ellipsizeUTF16(m.plainText(0), twilioBodyMax)
}

// callKind places a voice call through Twilio's Calls API: From, To and
// Twiml "<Response><Say>Hello! A message from Vigil: “backup” is DOWN.
// Reason: ….</Say></Response>", the title and the reason read out, XML
// escaped. It calls for a down flip, a re-alert, an escalation and, on a
// channel that asks for them, a failure notice; it sends nothing for an up
// flip or a maintenance notice, which are no reason to ring a phone. A call
// is not resolved.
type callKind struct{}

func (callKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	return twilioSecretRefs(spec.Call)
}

func (callKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.Call
	if s == nil {
		return Permanent(errors.New("the channel has no call settings"))
	}
	m := &d.Message
	if m.calm() {
		return nil
	}
	form := url.Values{"From": {s.From}, "To": {s.To}, "Twiml": {callTwiML(m)}}
	return d.twilioPost(ctx, s, "Calls.json", form)
}

// callTwiML is the call's TwiML: one sentence, said once.
func callTwiML(m *Message) string {
	spoken := strings.Join(strings.Fields("Hello! A message from Vigil: "+m.shortText()), " ")
	// Durations are in words already (package words), which a voice reads.
	spoken = words.Ellipsize(spoken, callSpokenMax)
	var b strings.Builder
	b.WriteString("<Response><Say>")
	// EscapeText writes to a strings.Builder, which does not fail.
	_ = xml.EscapeText(&b, []byte(spoken))
	b.WriteString("</Say></Response>")
	return b.String()
}
