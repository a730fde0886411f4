package cron

import (
	"testing"
	"time"
)

func BenchmarkNext(b *testing.B) {
	for _, c := range []struct{ name, expr, tz string }{
		{"every-15-min/UTC", "*/15 * * * *", ""},
		{"hourly/UTC", "0 * * * *", ""},
		{"weekdays-9am/UTC", "0 9 * * MON-FRI", ""},
		{"last-day/UTC", "0 0 L * *", ""},
		{"daily-3:30/Europe-Riga", "30 3 * * *", "Europe/Riga"},
		{"every-5-min/America-New_York", "*/5 * * * *", "America/New_York"},
		{"hourly-business/America-New_York", "0 9-17 * * 1-5", "America/New_York"},
		{"last-friday/Europe-Riga", "0 18 * * 5L", "Europe/Riga"},
	} {
		b.Run(c.name, func(b *testing.B) {
			e, err := Parse(c.expr)
			if err != nil {
				b.Fatal(err)
			}
			loc := loadLocation(b, c.tz)
			start := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
			t := start
			b.ReportAllocs()
			for b.Loop() {
				n, ok := e.Next(t, loc)
				if !ok || n.Year() > 2100 {
					n = start
				}
				t = n
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("*/15 9-17 * JAN-MAR MON-FRI"); err != nil {
			b.Fatal(err)
		}
	}
}
