package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// TestChannelsTest sends test notifications with `vigil channels test`
// against a real API server: through one Channel, through each member of
// a group, and says which member failed and why; the egress guard refuses
// loopback unless --egress-allow allows it.
func TestChannelsTest(t *testing.T) {
	ctx := context.Background()
	cluster, err := testenv.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Error(err)
		}
	})
	cfg := cluster.Config
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, cfg); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: cluster.Scheme})
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var got []string
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.URL.Path+" "+string(b))
		mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/broken") {
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(receiver.Close)
	received := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}

	const ns = "team-a"
	ref := func(key string) v1.SecretKeyRef { return v1.SecretKeyRef{Name: "hooks", Key: key} }
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hooks"}, StringData: map[string]string{
			"slack": receiver.URL + "/slack", "mattermost": receiver.URL + "/mattermost", "broken": receiver.URL + "/broken"}},
		&v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slack"}, Spec: v1.ChannelSpec{Kind: v1.ChannelSlack,
			Slack: &v1.IncomingWebhookChannel{URLSecretRef: ref("slack")}}},
		&v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mattermost"}, Spec: v1.ChannelSpec{Kind: v1.ChannelMattermost,
			Mattermost: &v1.IncomingWebhookChannel{URLSecretRef: ref("mattermost")}}},
		&v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken"}, Spec: v1.ChannelSpec{Kind: v1.ChannelRocketChat,
			RocketChat: &v1.IncomingWebhookChannel{URLSecretRef: ref("broken")}}},
		&v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "oncall"}, Spec: v1.ChannelSpec{Kind: v1.ChannelGroup,
			Group: &v1.GroupChannel{Channels: []string{"slack", "mattermost"}}}},
		&v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "everyone"}, Spec: v1.ChannelSpec{Kind: v1.ChannelGroup,
			Group: &v1.GroupChannel{Channels: []string{"slack", "broken", "gone"}}}},
	} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	test := func(channel string, args ...string) (string, error) {
		return vigil(t, append([]string{"--kubeconfig", kubeconfig, "channels", "test", channel, "-n", ns}, args...)...)
	}
	allow := "--egress-allow=127.0.0.0/8"

	// Loopback is refused by default: nothing is sent.
	if out, err := test("slack", "--egress-allow="); err == nil || !strings.Contains(err.Error(), "EgressDenied") {
		t.Errorf("without an allow: %v\n%s", err, out)
	}
	if n := len(received()); n != 0 {
		t.Fatalf("%d requests past the egress guard", n)
	}

	out, err := test("slack", allow)
	if err != nil || !strings.Contains(out, "channel team-a/slack (slack): test notification delivered") {
		t.Fatalf("%v\n%s", err, out)
	}
	if r := received(); len(r) != 1 || !strings.HasPrefix(r[0], "/slack ") || !strings.Contains(r[0], "[Test]") {
		t.Errorf("received %q", r)
	}

	out, err = test("oncall", allow)
	if err != nil || !strings.Contains(out, "channel team-a/oncall (group): test notification delivered") {
		t.Fatalf("%v\n%s", err, out)
	}
	if r := received(); len(r) != 3 || !strings.HasPrefix(r[1], "/slack ") || !strings.HasPrefix(r[2], "/mattermost ") {
		t.Errorf("received %q", r)
	}

	// Each member is tried; the error names those that failed.
	_, err = test("everyone", allow)
	if err == nil || !strings.Contains(err.Error(), "member broken: rocketchat: POST http://127.0.0.1") ||
		!strings.Contains(err.Error(), "HTTP 404") || !strings.Contains(err.Error(), `member gone: channels.monitoring.vigil.dev "gone" not found`) ||
		strings.Contains(err.Error(), "member slack") {
		t.Errorf("a group with a failing and a missing member: %v", err)
	}
	if r := received(); len(r) != 5 || !strings.HasPrefix(r[3], "/slack ") || !strings.HasPrefix(r[4], "/broken ") {
		t.Errorf("received %q", r)
	}
}
