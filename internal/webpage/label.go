package webpage

import (
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/monitor"
)

// Label is a status as a page shows it: a word and an icon beside its
// colour class, never colour alone.
type Label struct {
	Class, Word, Icon string
}

// labels of the statuses: a running check that is not down or paused
// reads "running".
var labels = map[string]Label{
	"down":    {"down", "down", "✖"},
	"grace":   {"grace", "late", "!"},
	"started": {"started", "running", "▶"},
	"up":      {"up", "up", "✔"},
	"new":     {"new", "new", "○"},
	"paused":  {"paused", "paused", "❚❚"},
}

// LabelOf is how a page shows the check's status.
func LabelOf(v checks.View) Label {
	key := string(v.Status)
	if v.Started && v.Status != monitor.StatusDown && v.Status != monitor.StatusPaused {
		key = "started"
	}
	return labels[key]
}

// StateWord names the state a flip went to.
func StateWord(up bool) string {
	if up {
		return "up"
	}
	return "down"
}
