package dashboard

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// zoneName is how a time zone is said: "Riga time" for Europe/Riga, "UTC".
func zoneName(tz string) string {
	if tz == "" || tz == "UTC" || tz == "Etc/UTC" {
		return "UTC"
	}
	city := tz[strings.LastIndex(tz, "/")+1:]
	return strings.ReplaceAll(city, "_", " ") + " time"
}

// formatIn writes t in the zone tz as "Mon 24 Nov 03:45".
func formatIn(t time.Time, tz string) string {
	loc, err := time.LoadLocation(tz)
	if err != nil || tz == "" {
		loc = time.UTC
	}
	return t.In(loc).Format("Mon 2 Jan 15:04")
}

var weekdays = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

// describeCron says a five-field cron expression in words where it has a
// common shape, and "" where it does not (the page then shows the
// expression and its next instants, which explain any schedule).
func describeCron(expr string) string {
	f := strings.Fields(expr)
	if len(f) != 5 {
		switch expr {
		case "@hourly":
			return "every hour, on the hour"
		case "@daily", "@midnight":
			return "every day at 00:00"
		case "@weekly":
			return "every Sunday at 00:00"
		case "@monthly":
			return "on the 1st of every month at 00:00"
		case "@yearly", "@annually":
			return "every 1 January at 00:00"
		}
		return ""
	}
	minute, hour, dom, month, dow := f[0], f[1], f[2], f[3], f[4]
	if month != "*" {
		return ""
	}
	num := func(s string, hi int) (int, bool) {
		n, err := strconv.Atoi(s)
		return n, err == nil && n >= 0 && n <= hi
	}
	step := func(s string) (int, bool) {
		rest, ok := strings.CutPrefix(s, "*/")
		if !ok {
			return 0, false
		}
		n, err := strconv.Atoi(rest)
		return n, err == nil && n > 0
	}
	m, mOK := num(minute, 59)
	h, hOK := num(hour, 23)
	if dom != "*" {
		d, ok := num(dom, 31)
		if !ok || d == 0 || dow != "*" || !mOK || !hOK {
			return ""
		}
		return fmt.Sprintf("on day %d of every month at %02d:%02d", d, h, m)
	}
	var days string
	switch dow {
	case "*":
		days = "every day"
	case "1-5", "MON-FRI", "mon-fri":
		days = "on weekdays"
	case "0,6", "6,0", "SAT,SUN", "sat,sun":
		days = "on weekends"
	default:
		d, ok := num(dow, 7)
		if !ok {
			return ""
		}
		days = "every " + weekdays[d%7]
	}
	switch {
	case minute == "*" && hour == "*" && dow == "*":
		return "every minute"
	case hour == "*" && dow == "*":
		if n, ok := step(minute); ok {
			return fmt.Sprintf("every %d minutes", n)
		}
		if mOK {
			return fmt.Sprintf("every hour at minute %d", m)
		}
	case mOK && dow == "*":
		if n, ok := step(hour); ok {
			return fmt.Sprintf("every %d hours at minute %d", n, m)
		}
	}
	if mOK && hOK {
		return fmt.Sprintf("%s at %02d:%02d", days, h, m)
	}
	return ""
}
