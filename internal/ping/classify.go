package ping

import (
	"strings"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
)

// Keywords are a check's comma-separated keyword lists.
type Keywords struct {
	Start, Success, Failure string
}

// KeywordsOf returns a check's keywords.
func KeywordsOf(spec *v1.CheckSpec) Keywords {
	return Keywords{Start: spec.StartKeywords, Success: spec.SuccessKeywords, Failure: spec.FailureKeywords}
}

// Classify decides a ping's kind from text by keywords, as the reference
// does for HTTP bodies (filterHttpBody) and emails: a failure keyword wins,
// then success, then start; with none, defaultFail makes it a failure and
// otherwise it is ignored.
func Classify(texts []string, kw Keywords, defaultFail bool) monitor.PingKind {
	switch {
	case containsAny(texts, kw.Failure):
		return monitor.PingFail
	case containsAny(texts, kw.Success):
		return monitor.PingSuccess
	case containsAny(texts, kw.Start):
		return monitor.PingStart
	case defaultFail:
		return monitor.PingFail
	}
	return monitor.PingIgnored
}

// containsAny reports whether any text contains any keyword of a
// comma-separated list; keywords are trimmed, empty ones skipped, and the
// match is a case-sensitive substring match.
func containsAny(texts []string, list string) bool {
	for _, kw := range strings.Split(list, ",") {
		kw = strings.TrimSpace(kw)
		if kw == "" {
			continue
		}
		for _, t := range texts {
			if strings.Contains(t, kw) {
				return true
			}
		}
	}
	return false
}
