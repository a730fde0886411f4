package notify

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-operator/vigil/internal/words"
)

// Helpers of the chat kinds (Telegram, Matrix, Mattermost, Rocket.Chat,
// Zulip, Google Chat, Microsoft Teams): they keep a message within its service's limits,
// identify one notification across retries, keep the words of a check's
// author from mentioning people, and write Markdown code.

// chatFitSteps are the successive bounds chatFitted tries for the
// free-form parts of a message: the check's description and the Channel's
// own text, in characters, and the last ping body excerpt, in bytes.
var chatFitSteps = []int{2000, 1000, 500, 200, 50}

// chatFitted renders m with render (at most chatBodyLimit bytes of the
// last ping body) and, while size measures the result over max, renders it
// again with the free-form parts cut to each of chatFitSteps in turn. The
// rest of a message is short by the CRDs' bounds (a name of 100
// characters, a subject of 250, tags of 500), so the last step fits every
// service's limit; it is returned whatever its size.
func chatFitted[T any](m *Message, max int, size func(T) int, render func(m *Message, bodyLimit int) T) T {
	out := render(m, chatBodyLimit)
	for _, n := range chatFitSteps {
		if size(out) <= max {
			break
		}
		c := *m
		c.Check.Desc = words.Ellipsize(m.Check.Desc, n)
		c.Text = words.Ellipsize(m.Text, n)
		out = render(&c, min(chatBodyLimit, n))
	}
	return out
}

// chatNotificationKey identifies one notification through one Channel: the
// same for every attempt to deliver it, so a service that deduplicates on it
// (Matrix's transaction ids) posts a retried request once, and different
// for any other notification: another check, flip, notice or Channel. A
// message without a time (a test) is keyed on the time it is sent.
func chatNotificationKey(d *Delivery) string {
	m := &d.Message
	h := sha256.New()
	for _, part := range []string{
		d.Channel.Namespace, d.Channel.Name,
		m.Check.Namespace, m.Check.Object, m.Check.UUID,
		strconv.FormatBool(m.Up), m.Reason, string(m.Notice), m.Held,
		m.flipTime().Format(time.RFC3339Nano), strconv.FormatBool(m.Test),
	} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// chatDefuseMentions keeps text that services scan for mentions ("@all",
// "@here", "<users/all>") from notifying anyone: a word joiner (U+2060),
// which shows as nothing, follows every "@" and "<".
var chatDefuseMentions = strings.NewReplacer("@", "@\u2060", "<", "<\u2060").Replace

// chatCodeFence is a Markdown code fence for body: three backticks, or one
// more than the longest run of backticks in body, so the body cannot close
// it.
func chatCodeFence(body string) string {
	return strings.Repeat("`", max(3, chatLongestBacktickRun(body)+1))
}

// chatCodeBlock is text in a fenced Markdown code block.
func chatCodeBlock(text string) string {
	fence := chatCodeFence(text)
	return fence + "\n" + text + "\n" + fence
}

// chatCodeSpan is s as a Markdown code span, its delimiters longer than
// any run of backticks in s (CommonMark), padded with spaces when s starts
// or ends with a backtick.
func chatCodeSpan(s string) string {
	delim := strings.Repeat("`", chatLongestBacktickRun(s)+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return delim + s + delim
}

func chatLongestBacktickRun(s string) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

// chatLinkURL makes a URL safe as a Markdown link destination: the
// characters that would end it are percent-encoded.
var chatLinkURL = strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E").Replace

// chatAPITarget is the URL of an API endpoint under base: base's path
// joined with elem (escaped path segments), the query kept. secret marks a
// URL that holds a credential, which errors then show by host only.
func chatAPITarget(base target, secret bool, elem ...string) target {
	return target{u: base.u.JoinPath(elem...), secret: secret}
}
