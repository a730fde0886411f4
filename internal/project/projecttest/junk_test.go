package projecttest

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vigil-operator/vigil/internal/project"
)

// The figures of the spec: as many Secrets as a namespace may hold, each of
// about a megabyte of lines that are not keys (under the API server's 1 MiB
// for a Secret's data), each edited junkEdits times. Issue #24's follow-up
// review measured half a second to a second a rebuild for them, with the
// registry locked: every edit held every project's lookups that long.
const (
	junkSecrets = project.DefaultSecretLimit
	junkSize    = 1<<20 - 1<<10
	junkEdits   = 2
)

var _ = Describe("A namespace's project Secrets of lines that are not keys", func() {
	It("cost other projects' lookups nothing while a tenant edits them in a loop", func() {
		ctx := context.Background()
		victim := harness.NewProject("junk-victim-")
		// A slug ping: each one looks the project's ping key up in the
		// registry, as every slug ping and API request does.
		r := harness.Call("POST", "/api/v3/checks/", victim.ReadWrite, `{"name": "nightly", "slug": "nightly", "timeout": 86400}`)
		Expect(r.Status).To(Equal(http.StatusCreated), r.Text())
		pingPath := "/ping/" + victim.PingKey + "/nightly"
		r = harness.Call("GET", pingPath, "", "")
		Expect(r.Status).To(Equal(http.StatusOK), r.Text())

		// The baseline: the same Secrets and edits, unlabelled, in another
		// namespace: the API server and etcd do the same work; the
		// manager's cache never sees them.
		baseline := measure(pingPath, func() { editJunk(newNamespace("junk-bystander-"), false) })
		hostile := newNamespace("junk-hostile-")
		during := measure(pingPath, func() { editJunk(hostile, true) })
		AddReportEntry("victim slug ping latency", fmt.Sprintf("p50 %v, p99 %v of %d pings while %d Secrets of %d KiB of junk lines "+
			"were created and edited %d times each unlabelled; p50 %v, p99 %v of %d pings while they were, as project Secrets",
			percentile(baseline, 50), p99(baseline), len(baseline), junkSecrets, junkSize>>10, junkEdits,
			percentile(during, 50), p99(during), len(during)))
		Expect(p99(during)).To(BeNumerically("<=", bound(p99(baseline))),
			"another project's slug ping p99 rose from %v to %v", p99(baseline), p99(during))

		By("the manager saw them: each Secret is told what of it is ignored")
		Eventually(func(g Gomega) map[string]string {
			var events eventsv1.EventList
			g.Expect(harness.Client.List(ctx, &events, client.InNamespace(hostile))).To(Succeed())
			told := map[string]string{}
			for _, e := range events.Items {
				if e.Reason == project.ReasonLimitExceeded {
					told[e.Regarding.Name] = e.Note
				}
			}
			return told
		}).Should(And(HaveLen(junkSecrets),
			HaveKeyWithValue("junk-00", ContainSubstring("lines that are not API keys")),
			HaveKeyWithValue("junk-00", ContainSubstring("read-write-keys from line 1101 on")),
			HaveKeyWithValue(fmt.Sprintf("junk-%02d", junkSecrets-1), ContainSubstring("all of read-write-keys and all of read-only-keys"))))
	})
})

// editJunk creates junkSecrets Secrets of junk lines in namespace,
// labelled as project Secrets or not, and edits each junkEdits times, one
// after the other, as fast as the API server takes them.
func editJunk(namespace string, labelled bool) {
	ctx := context.Background()
	secrets := make([]*corev1.Secret, junkSecrets)
	for i := range secrets {
		secrets[i] = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("junk-%02d", i)},
			Data:       junkData(0),
		}
		if labelled {
			secrets[i].Labels = map[string]string{project.SecretLabel: "true"}
		}
		ExpectWithOffset(1, harness.Client.Create(ctx, secrets[i])).To(Succeed())
	}
	for edit := 1; edit <= junkEdits; edit++ {
		for _, s := range secrets {
			s.Data = junkData(edit)
			ExpectWithOffset(1, harness.Client.Update(ctx, s)).To(Succeed())
		}
	}
}

// junkData is about junkSize bytes of malformed lines in both key fields,
// short ones of two characters: of the lines a reader that reads every
// line skips, the costliest per byte (a copy and a split each, about twice
// the cost of "#" or "x" lines); edit makes each edit differ.
func junkData(edit int) map[string][]byte {
	half := func(first string) []byte {
		return []byte(first + strings.Repeat("xx\n", (junkSize/2-len(first))/3))
	}
	return map[string][]byte{
		project.DataReadWriteKeys: half(fmt.Sprintf("# edit %d\n", edit)),
		project.DataReadOnlyKeys:  half(""),
	}
}
