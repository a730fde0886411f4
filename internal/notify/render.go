package notify

import (
	"html"
	"strings"
)

// The renderings of a message that the kinds share, so that each carries
// the same facts (the title, the reason, the check's details, the last
// ping's body excerpt and the link to the check's page) and differs only in
// its service's markup. Kinds with a layout of their own (Slack's fields,
// Discord's embeds, email) build it from the same parts: title,
// reasonLine, facts, bodyExcerpt and DetailsURL.

// plainText is the message as plain text: the title, the reason, one line
// per fact, the body excerpt (at most bodyLimit bytes; none when 0) and the
// link.
func (m *Message) plainText(bodyLimit int) string {
	var b strings.Builder
	b.WriteString(m.title())
	if l := m.reasonLine(); l != "" {
		b.WriteString("\n" + l)
	}
	b.WriteString("\n")
	for _, f := range m.facts() {
		b.WriteString("\n" + f.Title + ": " + f.Value)
	}
	if body := m.Check.bodyExcerpt(bodyLimit); bodyLimit > 0 && body != "" {
		b.WriteString("\n\nLast ping body:\n" + body)
	}
	if u := m.Check.DetailsURL; u != "" {
		b.WriteString("\n\n" + u)
	}
	return b.String()
}

// shortText is the message in one or two lines, for text messages and
// voice: the title and the reason.
func (m *Message) shortText() string {
	if l := m.reasonLine(); l != "" {
		return m.title() + " " + l
	}
	return m.title()
}

// markdown is the message in CommonMark: the title in bold (linked to the
// check's page), the reason, the facts as a list, and the body excerpt (at
// most chatBodyLimit bytes, as chat messages show it) in a fenced block
// (left out when it holds a fence of its own).
func (m *Message) markdown() string {
	const bodyLimit = chatBodyLimit
	var b strings.Builder
	title := markdownEscape(m.title())
	if u := m.Check.DetailsURL; u != "" {
		title = "[" + title + "](" + u + ")"
	}
	b.WriteString("**" + title + "**")
	if l := m.reasonLine(); l != "" {
		b.WriteString("\n\n" + markdownEscape(l))
	}
	b.WriteString("\n")
	for _, f := range m.facts() {
		v := markdownEscape(f.Value)
		if f.Code && !strings.Contains(f.Value, "`") {
			v = "`" + f.Value + "`"
		}
		b.WriteString("\n- **" + f.Title + ":** " + v)
	}
	if body := m.Check.bodyExcerpt(bodyLimit); body != "" && !strings.Contains(body, "```") {
		b.WriteString("\n\n**Last ping body:**\n```\n" + body + "\n```")
	}
	return b.String()
}

// markdownEscape escapes the characters CommonMark reads as markup.
// A word joiner after "@" keeps a check's name or description from
// mentioning people ("@org/team" on GitHub, "@board" on Trello).
var markdownEscape = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "[", `\[`, "]", `\]`,
	"<", `\<`, ">", `\>`, "#", `\#`, "|", `\|`, "~", `\~`, "@", "@\u2060").Replace

// htmlText is the message in the small HTML that Telegram and Matrix both
// accept: b, a, code and pre, with lines separated by br ("\n" for
// Telegram, which takes no br tag; "<br>" for Matrix). Pushover, which
// knows no code nor pre, drops those tags from it.
func (m *Message) htmlText(br string, bodyLimit int) string {
	esc := html.EscapeString
	var b strings.Builder
	title := esc(m.title())
	if u := m.Check.DetailsURL; u != "" {
		title = `<a href="` + esc(u) + `">` + title + "</a>"
	}
	b.WriteString("<b>" + title + "</b>")
	if l := m.reasonLine(); l != "" {
		b.WriteString(br + esc(l))
	}
	b.WriteString(br)
	for _, f := range m.facts() {
		v := esc(f.Value)
		if f.Code {
			v = "<code>" + v + "</code>"
		}
		b.WriteString(br + "<b>" + esc(f.Title) + ":</b> " + v)
	}
	if body := m.Check.bodyExcerpt(bodyLimit); bodyLimit > 0 && body != "" {
		b.WriteString(br + br + "<b>Last ping body:</b>" + br + "<pre>" + esc(body) + "</pre>")
	}
	return b.String()
}
