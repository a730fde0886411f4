package dashboard

import (
	"testing"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func TestZoneName(t *testing.T) {
	for tz, want := range map[string]string{"": "UTC", "UTC": "UTC", "Europe/Riga": "Riga time",
		"America/Argentina/Buenos_Aires": "Buenos Aires time"} {
		if got := zoneName(tz); got != want {
			t.Errorf("zoneName(%q) = %q, want %q", tz, got, want)
		}
	}
}

func TestDescribeCron(t *testing.T) {
	for expr, want := range map[string]string{
		"* * * * *":       "every minute",
		"*/5 * * * *":     "every 5 minutes",
		"15 * * * *":      "every hour at minute 15",
		"0 */6 * * *":     "every 6 hours at minute 0",
		"45 3 * * *":      "every day at 03:45",
		"0 9 * * 1-5":     "on weekdays at 09:00",
		"30 22 * * 0":     "every Sunday at 22:30",
		"0 0 * * 7":       "every Sunday at 00:00",
		"0 4 1 * *":       "on day 1 of every month at 04:00",
		"@daily":          "every day at 00:00",
		"0 3 * 1 *":       "", // months: said by the instants instead
		"0 3,15 * * *":    "",
		"1-5 * * * *":     "",
		"0 3 1 * 1":       "",
		"garbage":         "",
		"0 25 * * *":      "",
		"*/0 * * * *":     "",
		"0 9 * * MON-FRI": "on weekdays at 09:00",
	} {
		if got := describeCron(expr); got != want {
			t.Errorf("describeCron(%q) = %q, want %q", expr, got, want)
		}
	}
}

func TestCoverageLine(t *testing.T) {
	for _, tt := range []struct {
		cov  *v1.Coverage
		want string
	}{
		{nil, ""},
		{&v1.Coverage{CronJob: "backup"}, "Made for CronJob backup by its annotation monitoring.vigil.dev/check."},
		{&v1.Coverage{CronJob: "etl", Policy: "CronJobPolicy/team-a", PolicyFields: []string{"grace", "tags"},
			AnnotationFields: []string{"channels"}, AlsoSelectedBy: []string{"CronJobPolicy/team-b"}},
			"Made for CronJob etl by CronJobPolicy/team-a, which sets grace, tags. The CronJob's annotations set channels. " +
				"CronJobPolicy/team-b selects it too; the first policy by name applies."},
	} {
		if got := coverageLine(tt.cov); got != tt.want {
			t.Errorf("coverageLine(%+v) = %q, want %q", tt.cov, got, tt.want)
		}
	}
}
