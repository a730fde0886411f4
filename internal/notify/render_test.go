package notify

import (
	"strings"
	"testing"
	"time"
)

// Every shared rendering carries the same facts: the title, the reason, the
// check's details, the body excerpt and the link.
func TestRenderingsCarryTheSameFacts(t *testing.T) {
	m := downMessage()
	m.Check.Name = `Nightly <backup> & *co*`
	m.Check.LastPingBody = []byte("rows: 3 <ok>\n")
	for name, got := range map[string]string{
		"plainText": m.plainText(chatBodyLimit),
		"markdown":  m.markdown(),
		"htmlText":  m.htmlText("\n", chatBodyLimit),
	} {
		for _, want := range []string{"DOWN", "success signal did not arrive on time", "team-a", "Period", "1 day",
			"Total Pings", "42", "Last Ping", "Success, 10 minutes ago", "rows: 3", m.Check.DetailsURL} {
			if !strings.Contains(got, want) {
				t.Errorf("%s lacks %q:\n%s", name, want, got)
			}
		}
	}
	if got := m.plainText(0); strings.Contains(got, "rows: 3") {
		t.Errorf("plainText(0) shows the body:\n%s", got)
	}
}

func TestRenderingsEscape(t *testing.T) {
	m := downMessage()
	m.Check.Name = `a<b>&*c*_[d](e)`
	m.Check.LastPingBody = []byte("</pre><script>")
	html := m.htmlText("<br>", chatBodyLimit)
	for _, bad := range []string{"<b>&", "</pre><script>", "a<b>"} {
		if strings.Contains(html, bad) {
			t.Errorf("htmlText did not escape %q:\n%s", bad, html)
		}
	}
	if !strings.Contains(html, "a&lt;b&gt;&amp;*c*_[d](e)") || !strings.Contains(html, "<pre>&lt;/pre&gt;&lt;script&gt;</pre>") {
		t.Errorf("htmlText:\n%s", html)
	}
	md := m.markdown()
	if !strings.Contains(md, `a\<b\>&\*c\*\_\[d\](e)`) {
		t.Errorf("markdown did not escape the name:\n%s", md)
	}
	// A body holding a fence of its own would break out of the block.
	m.Check.LastPingBody = []byte("```\n**bold**")
	if md := m.markdown(); strings.Contains(md, "bold") {
		t.Errorf("markdown shows a body with a fence:\n%s", md)
	}
}

func TestShortText(t *testing.T) {
	m := downMessage()
	if got, want := m.shortText(), "“Nightly backup” is DOWN. Reason: success signal did not arrive on time, grace time passed."; got != want {
		t.Errorf("shortText = %q, want %q", got, want)
	}
	up := upMessage()
	up.Test = true
	if got, want := up.shortText(), "[Test] “Nightly backup” is UP."; got != want {
		t.Errorf("shortText = %q, want %q", got, want)
	}
}

func TestRetryAfterInBody(t *testing.T) {
	for _, tc := range []struct {
		body string
		want time.Duration
	}{
		{`{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 17","parameters":{"retry_after":17}}`, 17 * time.Second},
		{`{"errcode":"M_LIMIT_EXCEEDED","error":"Too many requests","retry_after_ms":2500}`, 2500 * time.Millisecond},
		{`{"retry_after": 1.5}`, 1500 * time.Millisecond},
		{`{"retry_after": 999999999}`, 24 * time.Hour},
		{`{"retry_after": -3}`, 0},
		{`not json`, 0},
		{``, 0},
		{`{"parameters": "x"}`, 0},
	} {
		if got := retryAfterInBody([]byte(tc.body)); got != tc.want {
			t.Errorf("retryAfterInBody(%s) = %v, want %v", tc.body, got, tc.want)
		}
	}
}

func FuzzRetryAfterInBody(f *testing.F) {
	f.Add([]byte(`{"parameters":{"retry_after":17}}`))
	f.Add([]byte(`{"retry_after_ms":1e300}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if d := retryAfterInBody(body); d < 0 || d > 24*time.Hour {
			t.Errorf("retryAfterInBody(%q) = %v, outside [0, 24h]", body, d)
		}
	})
}
