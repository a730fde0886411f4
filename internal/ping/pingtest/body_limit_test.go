package pingtest

import (
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/vigil-operator/vigil/internal/testenv/managertest"
)

var _ = Describe("A namespace's ping body limit", func() {
	It("refuses the bodies of a namespace past it, records their pings, and leaves another namespace's bodies alone", func() {
		a, b := newProject(), newProject()
		harness.SetBodyBytesLimit(a.ns, 3000)
		a1, a2 := a.create(`{"name": "a1"}`), a.create(`{"name": "a2"}`)
		b1 := b.create(`{"name": "b1"}`)
		body := strings.Repeat("x", 1000)
		bodyURL := func(p proj, uuid string) any {
			GinkgoHelper()
			pings := p.pings(uuid)
			Expect(pings).NotTo(BeEmpty())
			return pings[0]["body_url"]
		}
		refused := func() float64 { return managertest.NamespaceCounter("vigil_ping_bodies_refused_total", a.ns) }
		before := refused()

		for range 3 {
			expectOK(pingURL("POST", "/ping/"+a1, body))
		}
		Expect(bodyURL(a, a1)).NotTo(BeNil())

		// a2 holds no body to give up: its ping is recorded, its body not.
		expectOK(pingURL("POST", "/ping/"+a2+"/fail", body))
		Expect(a.check(a2)["status"]).To(Equal("down"), "the ping past the limit was not recorded")
		Expect(bodyURL(a, a2)).To(BeNil(), "a2's body was kept past its namespace's limit")
		Expect(refused()).To(Equal(before + 1))

		// a1 keeps its newest body by giving up its oldest.
		expectOK(pingURL("POST", "/ping/"+a1, body))
		Expect(bodyURL(a, a1)).NotTo(BeNil())

		// Another namespace keeps its bodies.
		expectOK(pingURL("POST", "/ping/"+b1, body))
		Expect(bodyURL(b, b1)).NotTo(BeNil(), "namespace b's body was refused for namespace a's limit")
		r := harness.Call("GET", "/api/v3/checks/"+b1+"/pings/1/body", b.rw, "")
		Expect(r.Status).To(Equal(http.StatusOK), r.String())
		Expect(string(r.Body)).To(Equal(body))
	})
})
