package apitest

import (
	"context"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// vigilAck runs `vigil ack` with the API key key in $VIGIL_API_KEY and
// returns its exit status and output.
func vigilAck(key string, args ...string) (int, string) {
	GinkgoHelper()
	kubeconfig := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(testenv.WriteKubeconfig(kubeconfig, harness.Config)).To(Succeed())
	return vigil([]string{"VIGIL_URL=" + baseURL, "VIGIL_API_KEY=" + key}, append([]string{"ack", "--kubeconfig", kubeconfig}, args...)...)
}

var _ = Describe("vigil ack against a running Vigil", func() {
	It("acknowledges a down by UUID or by Check name, and says why it cannot", func() {
		p := newProject()
		created := call("POST", "/api/v3/checks/", p.rw, `{"name": "cli-paged", "timeout": 3600}`).JSON()
		uuid := created["uuid"].(string)

		code, out := vigilAck(p.rw, uuid)
		Expect(code).To(Equal(1))
		Expect(out).To(ContainSubstring("check " + uuid + ": check is not down (409 Conflict)"))

		Expect(call("GET", "/ping/"+uuid+"/fail", "", "").Status).To(Equal(200))
		code, out = vigilAck(p.ro, uuid)
		Expect(code).To(Equal(1), "a read-only key")
		Expect(out).To(ContainSubstring("403"))

		var list v1.CheckList
		Expect(k8sClient.List(context.Background(), &list, client.InNamespace(p.ns))).To(Succeed())
		Expect(list.Items).To(HaveLen(1))
		name := list.Items[0].Name
		code, out = vigilAck(p.rw, "-n", p.ns, name)
		Expect(code).To(Equal(0), out)
		Expect(out).To(MatchRegexp(`^check ` + p.ns + `/` + name + `: down acknowledged by API key ` + p.rw[:12] +
			` at \S+; re-alerts and escalation stop until it recovers\n$`))
		Expect(call("GET", "/api/v3/checks/"+uuid+"/ack", p.rw, "").JSON()).To(HaveKeyWithValue("ack", HaveKeyWithValue("by", "API key "+p.rw[:12])))

		code, out = vigilAck("", uuid)
		Expect(code).To(Equal(1))
		Expect(out).To(ContainSubstring("$VIGIL_API_KEY is empty"))
	})
})
