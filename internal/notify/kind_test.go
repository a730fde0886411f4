package notify

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// Every kind the CRD accepts must have an implementation, and nothing else
// may be registered: the list is read from the generated CRD.
func TestEveryCRDKindIsRegistered(t *testing.T) {
	raw, err := os.ReadFile("../../config/crd/bases/monitoring.vigil.dev_channels.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	var src []v1.ChannelKind
	for _, e := range crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["kind"].Enum {
		var k string
		if err := json.Unmarshal(e.Raw, &k); err != nil {
			t.Fatal(err)
		}
		src = append(src, v1.ChannelKind(k))
	}
	if len(src) < 8 {
		t.Fatalf("the CRD lists %d kinds: %v", len(src), src)
	}
	for _, k := range src {
		if _, ok := Lookup(k); !ok {
			t.Errorf("kind %q has no implementation", k)
		}
	}
	if len(Kinds()) != len(src) {
		t.Errorf("registered %v, want exactly %v", Kinds(), src)
	}
}

func TestSecretRefs(t *testing.T) {
	ref := func(name, key string) v1.SecretKeyRef { return v1.SecretKeyRef{Name: name, Key: key} }
	r := ref("hook", "url")
	for _, tc := range []struct {
		spec v1.ChannelSpec
		want []v1.SecretKeyRef
	}{
		{v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{Down: &v1.WebhookRequest{URL: "http://x"}}}, nil},
		{v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{
			Down: &v1.WebhookRequest{URLSecretRef: &r, HeaderSecretRefs: map[string]v1.SecretKeyRef{"X-B": ref("h", "b"), "Authorization": ref("h", "auth")}},
			Up:   &v1.WebhookRequest{URL: "http://x"}}},
			[]v1.SecretKeyRef{r, ref("h", "auth"), ref("h", "b")}},
		{v1.ChannelSpec{Kind: v1.ChannelSlack, Slack: &v1.IncomingWebhookChannel{URLSecretRef: r}}, []v1.SecretKeyRef{r}},
		{v1.ChannelSpec{Kind: v1.ChannelMSTeams, MSTeams: &v1.IncomingWebhookChannel{URLSecretRef: r}}, []v1.SecretKeyRef{r}},
		{v1.ChannelSpec{Kind: v1.ChannelDiscord, Discord: &v1.DiscordChannel{IncomingWebhookChannel: v1.IncomingWebhookChannel{URLSecretRef: r}, ThreadName: "alerts"}}, []v1.SecretKeyRef{r}},
		{v1.ChannelSpec{Kind: v1.ChannelEmail, Email: &v1.EmailChannel{CredentialsSecretRef: &v1.LocalSecretRef{Name: "smtp"}}},
			[]v1.SecretKeyRef{ref("smtp", "username"), ref("smtp", "password")}},
		{v1.ChannelSpec{Kind: v1.ChannelEmail, Email: &v1.EmailChannel{}}, nil},
		{v1.ChannelSpec{Kind: v1.ChannelEmail, Email: &v1.EmailChannel{Auth: v1.SMTPAuthXOAuth2,
			OAuth2: &v1.SMTPOAuth2{ClientSecretRef: ref("entra", "client-secret")}}}, []v1.SecretKeyRef{ref("entra", "client-secret")}},
		{v1.ChannelSpec{Kind: v1.ChannelNtfy, Ntfy: &v1.NtfyChannel{TokenSecretRef: &r}}, []v1.SecretKeyRef{r}},
		{v1.ChannelSpec{Kind: v1.ChannelPagerDuty, PagerDuty: &v1.PagerDutyChannel{RoutingKeySecretRef: r}}, []v1.SecretKeyRef{r}},
		{v1.ChannelSpec{Kind: v1.ChannelAlertmanager, Alertmanager: &v1.AlertmanagerChannel{URL: "http://am"}}, nil},
	} {
		k, _ := Lookup(tc.spec.Kind)
		got := k.SecretRefs(&tc.spec)
		if !reflect.DeepEqual(got, tc.want) && (len(got) != 0 || len(tc.want) != 0) {
			t.Errorf("%s: SecretRefs = %v, want %v", tc.spec.Kind, got, tc.want)
		}
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "twice") {
			t.Errorf("want a panic about double registration, got %v", r)
		}
	}()
	register(v1.ChannelWebhook, webhookKind{})
}
