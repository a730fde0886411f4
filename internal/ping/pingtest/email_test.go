package pingtest

import (
	"net/smtp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// sendMail sends a message with Go's own SMTP client.
func sendMail(to, subject, body string) error {
	msg := "From: backup@db1.example.com\r\nTo: " + to + "\r\nSubject: " + subject +
		"\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + body + "\r\n"
	return smtp.SendMail(smtpAddr, nil, "backup@db1.example.com", []string{to}, []byte(msg))
}

var _ = Describe("Email pings", func() {
	It("turns a message to <uuid>@domain into a success ping with the message as body", func() {
		p := newProject()
		uuid := p.create(`{"name": "mailed"}`)
		Expect(sendMail(uuid+"@pings.example.com", "Backup done", "all 42 tables dumped")).To(Succeed())
		pings := p.pings(uuid)
		Expect(pings).To(HaveLen(1))
		Expect(pings[0]).To(And(HaveKeyWithValue("type", "success"), HaveKeyWithValue("scheme", "email"),
			HaveKeyWithValue("ua", "Email from backup@db1.example.com"), HaveKeyWithValue("remote_addr", "127.0.0.1")))
		body := harness.Call("GET", "/api/v3/checks/"+uuid+"/pings/1/body", p.rw, "")
		Expect(body.Text()).To(And(ContainSubstring("Subject: Backup done"), ContainSubstring("all 42 tables dumped")))
		Expect(p.check(uuid)).To(HaveKeyWithValue("status", "up"))
	})

	It("classifies by subject and body keywords when the check filters them", func() {
		p := newProject()
		uuid := p.create(`{"name": "filtered", "filter_subject": true, "filter_body": true,
			"success_kw": "SUCCESS", "failure_kw": "FAIL, ERROR", "start_kw": "STARTED"}`)
		Expect(sendMail(uuid+"@pings.example.com", "Job STARTED", "")).To(Succeed())
		Expect(sendMail(uuid+"@PINGS.example.com", "Report", "it ended with an ERROR")).To(Succeed())
		Expect(sendMail(uuid+"@pings.example.com", "SUCCESS at last", "fine")).To(Succeed())
		Expect(sendMail(uuid+"@pings.example.com", "Newsletter", "nothing to see")).To(Succeed())
		var kinds []string
		for _, ping := range p.pings(uuid) {
			kinds = append(kinds, ping["type"].(string))
		}
		Expect(kinds).To(Equal([]string{"ign", "success", "fail", "start"}))

		// The deprecated subject field maps onto the same filter.
		legacy := p.create(`{"name": "legacy", "subject": "OK", "subject_fail": "BAD"}`)
		Expect(sendMail(legacy+"@pings.example.com", "BAD news", "")).To(Succeed())
		Expect(p.pings(legacy)[0]).To(HaveKeyWithValue("type", "fail"))
	})

	It("reaches a check by <ping-key>+<slug>, drops mail to addresses that name no check and refuses other domains", func() {
		p := newProject()
		uuid := p.create(`{"name": "by slug", "slug": "nightly-db"}`)
		Expect(sendMail(p.pingKey+"+nightly-db@pings.example.com", "done", "")).To(Succeed())
		Expect(p.pings(uuid)).To(HaveLen(1))

		Expect(sendMail("00000000-0000-4000-8000-000000000000@pings.example.com", "x", "")).To(Succeed())
		Expect(sendMail(p.pingKey+"+no-such-slug@pings.example.com", "x", "")).To(Succeed())
		err := sendMail(uuid+"@elsewhere.example.com", "x", "")
		Expect(err).To(MatchError(ContainSubstring("550")))
		Expect(p.pings(uuid)).To(HaveLen(1))
		Expect(strings.Count(p.pingKey, "+")).To(BeZero())
	})
})
