package apitest

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/vigil-operator/vigil/internal/testenv"
)

// vigilBinary is this tree's vigil command (testenv.Vigil).
func vigilBinary() string {
	GinkgoHelper()
	bin, err := testenv.Vigil(context.Background())
	Expect(err).NotTo(HaveOccurred())
	return bin
}

// vigilRun runs `vigil run` and returns its exit status and output.
func vigilRun(url string, args ...string) (int, string) {
	return vigil([]string{"VIGIL_URL="}, append([]string{"run", "--url", url}, args...)...)
}

// vigil runs the vigil command with env added to the test's, and returns
// its exit status and output.
func vigil(env []string, args ...string) (int, string) {
	GinkgoHelper()
	cmd := exec.CommandContext(context.Background(), vigilBinary(), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	Expect(err).NotTo(HaveOccurred(), string(out))
	return 0, string(out)
}

var _ = Describe("vigil run against a running Vigil", func() {
	It("reports success, an exit status with the output's tail, and a megabyte of output", func() {
		p := newProject()
		uuid := call("POST", "/api/v3/checks/", p.rw, `{"name": "wrapped"}`).JSON()["uuid"].(string)
		pings := func() []any { return call("GET", "/api/v3/checks/"+uuid+"/pings/", p.rw, "").JSON()["pings"].([]any) }

		code, out := vigilRun(baseURL, uuid, "--", "sh", "-c", "echo hello; exit 0")
		Expect(code).To(Equal(0), out)
		Expect(out).To(ContainSubstring("hello"))
		Expect(pings()).To(HaveLen(2))
		Expect(pings()[0]).To(And(HaveKeyWithValue("type", "success"), HaveKey("duration")))
		Expect(pings()[1]).To(HaveKeyWithValue("type", "start"))

		code, out = vigilRun(baseURL, uuid, "--", "sh", "-c", "echo something broke >&2; exit 3")
		Expect(code).To(Equal(3), out)
		latest := pings()[0].(map[string]any)
		Expect(latest).To(HaveKeyWithValue("type", "fail"))
		n := int(latest["n"].(float64))
		body := call("GET", "/api/v3/checks/"+uuid+"/pings/"+itoa(n)+"/body", p.rw, "")
		Expect(string(body.Body)).To(ContainSubstring("something broke"))

		code, out = vigilRun(baseURL, uuid, "--", "sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' x; echo; echo the end")
		Expect(code).To(Equal(0))
		Expect(len(out)).To(BeNumerically(">", 1000000), "the output passes through whole")
		latest = pings()[0].(map[string]any)
		Expect(latest).To(HaveKeyWithValue("type", "success"))
		body = call("GET", "/api/v3/checks/"+uuid+"/pings/"+itoa(int(latest["n"].(float64)))+"/body", p.rw, "")
		Expect(body.Status).To(Equal(http.StatusOK))
		Expect(strings.TrimSpace(string(body.Body))).To(HaveSuffix("the end"), "the tail of the output is the body")
		Expect(len(body.Body)).To(BeNumerically("<=", 100000))
		Expect(call("GET", "/api/v3/checks/"+uuid, p.rw, "").JSON()).To(HaveKeyWithValue("status", "up"))
	})

	It("still runs the command and passes its exit status through when Vigil is unreachable", func() {
		code, out := vigilRun("http://127.0.0.1:1", "--attempts", "2", "--backoff", "10ms",
			"00000000-0000-4000-8000-000000000000", "--", "sh", "-c", "echo ran; exit 7")
		Expect(code).To(Equal(7))
		Expect(out).To(ContainSubstring("ran"))
	})
})

func itoa(n int) string { return strconv.Itoa(n) }
