package pingtest

import (
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
)

var _ = Describe("What a ping stores about its request", func() {
	It("is cut to its bound, in valid UTF-8, and the ping is taken", func() {
		p := newProject()
		u := p.create(`{"name": "bounds"}`)
		long := strings.Repeat("X", 1000)
		header := http.Header{
			"User-Agent":        {strings.Repeat("😀", 300) + "\xff"},
			"X-Forwarded-For":   {"1.1.1.1, " + long},
			"X-Forwarded-Proto": {long},
		}
		expectOK(do(long, baseURL+"/ping/"+u, "", header))
		// Bytes that are not UTF-8 are stored, and listed, as U+FFFD.
		expectOK(do("GET", baseURL+"/ping/"+u, "", http.Header{"User-Agent": {"caf\xe9"}, "X-Forwarded-Proto": {"\xe9"}}))

		pings := p.pings(u)
		Expect(pings).To(HaveLen(2))
		Expect(pings[1]).To(MatchKeys(IgnoreExtras, Keys{
			"method": Equal(strings.Repeat("X", 32)), "ua": Equal(strings.Repeat("😀", 200)),
			"scheme": Equal(strings.Repeat("X", 16)), "remote_addr": Equal(strings.Repeat("X", 64)),
		}))
		Expect(pings[0]).To(MatchKeys(IgnoreExtras, Keys{"ua": Equal("caf\ufffd"), "scheme": Equal("\ufffd")}))
	})
})
