package notify

// Shared parts of the paging services' kinds (Opsgenie, Splunk On-Call,
// PagerTree, Spike.sh): the labelled details they carry as structured data.
// Services written in Java count characters in UTF-16 code units, as
// utf16Len does.

// pagingField is one labelled value of a paging service's structured
// details (Opsgenie's details, PagerTree's Meta).
type pagingField struct {
	Key, Value string
	// Whole values are left out rather than cut short when they do not
	// fit: a link cut in the middle leads nowhere.
	Whole bool
}

// pagingFields lists what a paging service's structured details carry,
// most important first (the first to be dropped when a service bounds the
// total is the last): the reason, the Channel's own text, the link to the
// check's page, the facts and the last ping body excerpt (at most
// chatBodyLimit bytes, as in chat messages).
func (m *Message) pagingFields() []pagingField {
	var out []pagingField
	if r := m.reasonText(); r != "" {
		out = append(out, pagingField{Key: "Reason", Value: r})
	}
	if m.Text != "" {
		out = append(out, pagingField{Key: "Message", Value: m.Text})
	}
	if u := m.Check.DetailsURL; u != "" {
		out = append(out, pagingField{Key: "Link", Value: u, Whole: true})
	}
	for _, f := range m.facts() {
		out = append(out, pagingField{Key: f.Title, Value: f.Value})
	}
	if body := m.Check.bodyExcerpt(chatBodyLimit); body != "" {
		out = append(out, pagingField{Key: "Last Ping Body", Value: body})
	}
	return out
}
