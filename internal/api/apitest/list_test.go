package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// The list keeps each check's JSON from one list to the next (internal/api
// rendered.go). Whatever changes between two lists (pings, runs, spec
// edits through the API or kubectl, pauses, channels, deletions), every
// check in a list must read exactly as it reads alone, which is rendered
// afresh, for every API version and key.
var _ = Describe("The list of checks", func() {
	It("shows every change made since the list before it", func() {
		p := newProject()
		uuids := make([]string, 3)
		for i, body := range []string{
			`{"name": "simple", "timeout": 3600, "tags": "a b"}`,
			`{"name": "cron", "schedule": "0 3 * * *", "tz": "Europe/Riga", "grace": 600}`,
			`{"name": "third", "timeout": 60}`,
		} {
			r := call("POST", "/api/v3/checks/", p.rw, body)
			Expect(r.Status).To(Equal(http.StatusCreated), r.String())
			uuids[i] = r.JSON()["uuid"].(string)
		}
		ctx := context.Background()
		channel := func(name string) *v1.Channel {
			return &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: name}, Spec: v1.ChannelSpec{
				Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{Down: &v1.WebhookRequest{URL: "http://127.0.0.1:1/hook"}}}}
		}
		// Each change but "nothing" and the first two channels shows in a
		// check read alone.
		hidden := map[string]bool{"nothing": true, "a new channel": true, "another channel": true}
		steps := []struct {
			name   string
			change func()
		}{
			{"nothing", func() {}},
			{"a ping", func() { Expect(call("GET", "/ping/"+uuids[0], "", "").Status).To(Equal(http.StatusOK)) }},
			{"a start", func() { Expect(call("GET", "/ping/"+uuids[1]+"/start", "", "").Status).To(Equal(http.StatusOK)) }},
			{"a failure", func() { Expect(call("GET", "/ping/"+uuids[2]+"/fail", "", "").Status).To(Equal(http.StatusOK)) }},
			{"an API update", func() {
				Expect(call("POST", "/api/v3/checks/"+uuids[0], p.rw, `{"name": "renamed", "grace": 120}`).Status).To(Equal(http.StatusOK))
			}},
			{"a kubectl edit", func() {
				// As kubectl edit does: read, change, write, and again from
				// a fresh read when the status was written in between.
				Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
					var list v1.CheckList
					if err := k8sClient.List(ctx, &list, client.InNamespace(p.ns)); err != nil {
						return err
					}
					for i := range list.Items {
						if c := &list.Items[i]; c.Namespace == p.ns && c.Spec.Name == "cron" {
							c.Spec.Desc = "edited with kubectl"
							if err := k8sClient.Update(ctx, c); err != nil {
								return err
							}
						}
					}
					return nil
				})).To(Succeed())
			}},
			{"a pause", func() {
				Expect(call("POST", "/api/v3/checks/"+uuids[1]+"/pause", p.rw, "").Status).To(Equal(http.StatusOK))
			}},
			{"a new channel", func() { Expect(k8sClient.Create(ctx, channel("ops"))).To(Succeed()) }},
			{"another channel", func() { Expect(k8sClient.Create(ctx, channel("dev"))).To(Succeed()) }},
			{"channels assigned", func() {
				Expect(call("POST", "/api/v3/checks/"+uuids[2], p.rw, `{"channels": "*"}`).Status).To(Equal(http.StatusOK))
			}},
			// The check's spec names its channels: what its "channels"
			// field shows changes without its spec.
			{"a channel deleted", func() { Expect(k8sClient.Delete(ctx, channel("ops"))).To(Succeed()) }},
			{"a channel made again", func() { Expect(k8sClient.Create(ctx, channel("ops"))).To(Succeed()) }},
			{"a resume", func() {
				Expect(call("POST", "/api/v3/checks/"+uuids[1]+"/resume", p.rw, "").Status).To(Equal(http.StatusOK))
			}},
			{"a check deleted", func() { Expect(call("DELETE", "/api/v3/checks/"+uuids[0], p.rw, "").Status).To(Equal(http.StatusOK)) }},
			{"a check created", func() {
				Expect(call("POST", "/api/v3/checks/", p.rw, `{"name": "late"}`).Status).To(Equal(http.StatusCreated))
			}},
		}
		for _, step := range steps {
			By(step.name)
			// The checks read alone are rendered afresh: once they show
			// the change, a list that does not is wrong, not late.
			before := eachCheckAlone(p.rw)
			step.change()
			if !hidden[step.name] {
				Eventually(func() string { return eachCheckAlone(p.rw) }).ShouldNot(Equal(before), "the change of %s", step.name)
			}
			for _, view := range []struct{ version, key string }{{"3", p.rw}, {"3", p.ro}, {"1", p.rw}, {"2", p.ro}} {
				Eventually(func() error { return listReadsAsEachCheck(view.version, view.key) }).Should(Succeed(),
					"after %s, API v%s", step.name, view.version)
			}
		}
	})
})

// listReadsAsEachCheck lists a project's checks and reads each alone (by
// UUID, or with a read-only key by unique key): the list must hold the
// same JSON.
func listReadsAsEachCheck(version, key string) error {
	prefix := "/api/v" + version + "/checks/"
	r := call("GET", prefix, key, "")
	var list struct{ Checks []json.RawMessage }
	if r.Status != http.StatusOK {
		return fmt.Errorf("list: %s", r)
	}
	if err := json.Unmarshal(r.Body, &list); err != nil {
		return fmt.Errorf("list: %w", err)
	}
	for _, item := range list.Checks {
		var ids struct {
			UUID      string `json:"uuid"`
			UniqueKey string `json:"unique_key"`
		}
		Expect(json.Unmarshal(item, &ids)).To(Succeed())
		id := ids.UUID
		if id == "" {
			id = ids.UniqueKey
		}
		alone := call("GET", prefix+id, key, "")
		if alone.Status != http.StatusOK {
			return fmt.Errorf("GET %s: %s", id, alone)
		}
		if !bytes.Equal(bytes.TrimSpace(alone.Body), item) {
			return fmt.Errorf("the list shows\n%s\nalone it reads\n%s", item, alone.Body)
		}
	}
	return nil
}

// eachCheckAlone is every check of the project read alone (rendered
// afresh), in the order the list names them.
func eachCheckAlone(key string) string {
	r := call("GET", "/api/v3/checks/", key, "")
	var list struct {
		Checks []struct {
			UUID string `json:"uuid"`
		}
	}
	Expect(json.Unmarshal(r.Body, &list)).To(Succeed(), r.String())
	var b strings.Builder
	for _, c := range list.Checks {
		b.WriteString(call("GET", "/api/v3/checks/"+c.UUID, key, "").String())
		b.WriteByte('\n')
	}
	return b.String()
}
