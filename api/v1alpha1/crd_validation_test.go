package v1alpha1_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	monitoringv1alpha1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/notify"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// newNamespace creates a namespace of its own for one test.
func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "crd-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// parseManifest decodes every YAML document of a manifest.
func parseManifest(manifest []byte) []*unstructured.Unstructured {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	for {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		Expect(err).NotTo(HaveOccurred())
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal(doc, &obj.Object)).To(Succeed())
		if len(obj.Object) == 0 {
			continue // a document holding only comments
		}
		objs = append(objs, obj)
	}
}

// apply creates every object of a manifest in ns and returns the first error.
func apply(ns, manifest string) error {
	for _, obj := range parseManifest([]byte(manifest)) {
		obj.SetNamespace(ns)
		if err := k8sClient.Create(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

var _ = Describe("the samples in config/samples", func() {
	root, err := testenv.RepoRoot()
	if err != nil {
		panic(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "config", "samples", "*.yaml"))
	cronJobs, _ := filepath.Glob(filepath.Join(root, "config", "samples", "cronjobs", "*.yaml"))
	channels, _ := filepath.Glob(filepath.Join(root, "config", "samples", "channels", "*.yaml"))
	files = append(append(files, cronJobs...), channels...)

	It("are present, one Channel of each kind among them", func() {
		Expect(files).To(HaveLen(10 + len(notify.Kinds())))
		for _, k := range notify.Kinds() {
			Expect(filepath.Join(root, "config", "samples", "channels", string(k)+".yaml")).To(BeAnExistingFile())
		}
	})

	for _, file := range files {
		It("accepts "+filepath.Base(file), func() {
			manifest, err := os.ReadFile(file)
			Expect(err).NotTo(HaveOccurred())
			Expect(apply(newNamespace(), string(manifest))).To(Succeed())
		})
	}
})

var _ = Describe("Check defaults", func() {
	It("fills in grace and tz as the contract gives them", func() {
		ns := newNamespace()
		Expect(apply(ns, `
apiVersion: monitoring.vigil.dev/v1alpha1
kind: Check
metadata: {name: defaults}
spec: {}
`)).To(Succeed())
		var check monitoringv1alpha1.Check
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "defaults"}, &check)).To(Succeed())
		Expect(check.Spec.Grace).To(Equal(int64(3600)))
		Expect(check.Spec.TZ).To(Equal(monitoringv1alpha1.TimeZone("UTC")))
		Expect(check.Spec.Timeout).To(BeNil())
		Expect(check.Spec.Methods).To(BeEmpty())
	})

	It("counts characters, not bytes, as the Management API does", func() {
		Expect(apply(newNamespace(), check(
			"  name: "+strings.Repeat("😀", 100)+"\n"+
				"  desc: "+strings.Repeat("😀", 10000)+"\n"+
				"  tags: "+strings.Repeat("😀", 500)+"\n"+
				"  startKeywords: "+strings.Repeat("😀", 200)+"\n"))).To(Succeed())
	})

	It("accepts a legacy time-zone alias and an OnCalendar schedule", func() {
		Expect(apply(newNamespace(), `
apiVersion: monitoring.vigil.dev/v1alpha1
kind: Check
metadata: {name: oncalendar}
spec:
  schedule: "Mon..Fri 09:00 Europe/Riga"
  tz: US/Eastern
`)).To(Succeed())
	})
})

// check returns a Check manifest with the given spec lines (YAML, indented by
// the caller as under spec:).
func check(spec string) string {
	return "apiVersion: monitoring.vigil.dev/v1alpha1\nkind: Check\nmetadata: {name: bad}\nspec:\n" + spec
}

// channel returns a Channel manifest with the given spec lines.
func channel(spec string) string {
	return "apiVersion: monitoring.vigil.dev/v1alpha1\nkind: Channel\nmetadata: {name: bad}\nspec:\n" + spec
}

// window returns a MaintenanceWindow manifest with the given spec lines.
func window(spec string) string {
	return "apiVersion: monitoring.vigil.dev/v1alpha1\nkind: MaintenanceWindow\nmetadata: {name: bad}\nspec:\n" + spec
}

var _ = Describe("MaintenanceWindow", func() {
	It("accepts a one-off window by label, and defaults tz", func() {
		ns := newNamespace()
		Expect(apply(ns, `
apiVersion: monitoring.vigil.dev/v1alpha1
kind: MaintenanceWindow
metadata: {name: upgrade}
spec:
  selector: {matchLabels: {team: data}}
  from: "2026-12-01T02:00:00Z"
  to: "2026-12-01T04:00:00Z"
`)).To(Succeed())
		var mw monitoringv1alpha1.MaintenanceWindow
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "upgrade"}, &mw)).To(Succeed())
		Expect(mw.Spec.TZ).To(Equal(monitoringv1alpha1.TimeZone("UTC")))
	})
})

var _ = DescribeTable("rejects a bad manifest with a clear message",
	func(manifest string, wantField, wantMessage string) {
		err := apply(newNamespace(), manifest)
		Expect(err).To(HaveOccurred())
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(err.Error()).To(ContainSubstring(wantField))
		Expect(err.Error()).To(ContainSubstring(wantMessage))
	},
	Entry("a window that selects nothing", window("  from: \"2026-12-01T02:00:00Z\"\n  to: \"2026-12-01T04:00:00Z\"\n"),
		"spec", "select checks with at least one of selector, tags and checks"),
	Entry("a window whose lists are empty", window("  tags: []\n  checks: []\n  from: \"2026-12-01T02:00:00Z\"\n  to: \"2026-12-01T04:00:00Z\"\n"),
		"spec", "select checks with at least one of selector, tags and checks"),
	Entry("a window with from and no to", window("  checks: [a]\n  from: \"2026-12-01T02:00:00Z\"\n"),
		"spec", "set from and to together"),
	Entry("a window with a schedule and no duration", window("  checks: [a]\n  schedule: \"0 2 * * *\"\n"),
		"spec", "set schedule and duration together"),
	Entry("a window both one-off and recurring", window("  checks: [a]\n  from: \"2026-12-01T02:00:00Z\"\n  to: \"2026-12-01T04:00:00Z\"\n  schedule: \"0 2 * * *\"\n  duration: 1h\n"),
		"spec", "set either from and to (a one-off window) or schedule and duration (a recurring window)"),
	Entry("a window that ends before it starts", window("  checks: [a]\n  from: \"2026-12-01T04:00:00Z\"\n  to: \"2026-12-01T02:00:00Z\"\n"),
		"spec", "to must be after from"),
	Entry("a window of 32 days", window("  checks: [a]\n  schedule: \"0 2 * * *\"\n  duration: 768h\n"),
		"spec.duration", "duration must be between 1m and 744h (31 days)"),
	Entry("a window tag with a space", window("  tags: [\"a b\"]\n  from: \"2026-12-01T02:00:00Z\"\n  to: \"2026-12-01T04:00:00Z\"\n"),
		"spec.tags[0]", "should match"),
	Entry("a window in an unknown time zone", window("  checks: [a]\n  schedule: \"0 2 * * *\"\n  duration: 1h\n  tz: Mars/Olympus_Mons\n"),
		"spec.tz", "tz must be an IANA time-zone name"),
	Entry("an SLA with no rule", check("  sla: {window: 24h}\n"),
		"spec.sla", "sla needs minSuccessRate, maxDurationIncrease or both"),
	Entry("an SLA rate above 100", check("  sla: {minSuccessRate: \"100.5\"}\n"),
		"spec.sla.minSuccessRate", "should match"),
	Entry("an SLA rate of 0", check("  sla: {minSuccessRate: \"0\"}\n"),
		"spec.sla.minSuccessRate", "sla.minSuccessRate must be above 0"),
	Entry("an SLA rate as a fraction", check("  sla: {minSuccessRate: \"0.95.1\"}\n"),
		"spec.sla.minSuccessRate", "should match"),
	Entry("an SLA window of 32 days", check("  sla: {window: 768h, maxDurationIncrease: 50}\n"),
		"spec.sla.window", "sla.window must be between 1h and 744h"),
	Entry("an SLA slowdown of 0%", check("  sla: {maxDurationIncrease: 0}\n"),
		"spec.sla.maxDurationIncrease", "greater than or equal to 1"),
	Entry("a Channel event that does not exist", channel("  kind: webhook\n  webhook: {down: {url: \"http://x\"}}\n  events: [slo]\n"),
		"spec.events[0]", "Unsupported value"),
	Entry("timeout below 60", check("  timeout: 59\n"),
		"spec.timeout", "greater than or equal to 60"),
	Entry("timeout above 365 days", check("  timeout: 31536001\n"),
		"spec.timeout", "less than or equal to 31536000"),
	Entry("grace below 60", check("  grace: 59\n"),
		"spec.grace", "greater than or equal to 60"),
	Entry("grace above 365 days", check("  grace: 31536001\n"),
		"spec.grace", "less than or equal to 31536000"),
	Entry("timeout as a string", check("  timeout: \"1h\"\n"),
		"spec.timeout", "must be of type integer"),
	Entry("slug with a space and capitals", check("  slug: Bad Slug\n"),
		"spec.slug", "slug may contain only lowercase letters"),
	Entry("slug over 100 characters", check("  slug: "+strings.Repeat("a", 101)+"\n"),
		"spec.slug", "may not be more than 100"),
	Entry("name over 100 characters", check("  name: "+strings.Repeat("é", 101)+"\n"),
		"spec.name", "may not be more than 100"),
	Entry("methods PUT", check("  methods: PUT\n"),
		"spec.methods", `supported values: "", "POST"`),
	Entry("methods in lower case", check("  methods: post\n"),
		"spec.methods", `Unsupported value: "post"`),
	Entry("unknown time zone", check("  schedule: \"0 3 * * *\"\n  tz: Mars/Olympus_Mons\n"),
		"spec.tz", "tz must be an IANA time-zone name"),
	Entry("time zone in the wrong case", check("  schedule: \"0 3 * * *\"\n  tz: utc\n"),
		"spec.tz", "names are case-sensitive"),
	Entry("cron macro", check("  schedule: \"@daily\"\n"),
		"spec.schedule", "schedule may contain only letters"),
	Entry("blank schedule", check("  schedule: \"   \"\n"),
		"spec.schedule", "schedule must not be blank"),
	Entry("schedule over 100 characters", check("  schedule: \""+strings.Repeat("* ", 51)+"\"\n"),
		"spec.schedule", "may not be more than 100"),
	Entry("both timeout and schedule", check("  timeout: 3600\n  schedule: \"0 3 * * *\"\n"),
		"spec", "set either timeout (a simple check) or schedule (a cron check), not both"),
	Entry("all channels mixed with names", check("  channels: [\"*\", ops]\n"),
		"spec.channels", `"*" (all channels) cannot be combined with channel names`),
	Entry("duplicate channel names", check("  channels: [ops, ops]\n"),
		"spec.channels", "Duplicate value"),
	Entry("uppercase uuid", check("  uuid: 5D5F3E70-1C6D-4B6C-9C3A-1F0D2E3C4B5A\n"),
		"spec.uuid", "uuid must be a lowercase hyphenated UUID"),
	Entry("keywords over 200 characters", check("  successKeywords: "+strings.Repeat("k", 201)+"\n"),
		"spec.successKeywords", "may not be more than 200"),
	Entry("desc over 10,000 characters", check("  desc: "+strings.Repeat("😀", 10001)+"\n"),
		"spec.desc", "may not be more than 10000"),
	Entry("tags over 500 characters", check("  tags: "+strings.Repeat("t ", 250)+"t\n"),
		"spec.tags", "may not be more than 500"),
	Entry("more than 100 channels", check("  channels: ["+strings.Repeat("c,", 100)+"c]\n"),
		"spec.channels", "must have at most 100 items"),
	Entry("filter flag as a string", check("  filterBody: \"true\"\n"),
		"spec.filterBody", "must be of type boolean"),
	Entry("a template on a webhook Channel", channel("  kind: webhook\n  webhook: {down: {url: \"https://example.com\"}}\n  template: {subject: \"$NAME\"}\n"),
		"spec", "a webhook Channel words its requests in webhook.down and webhook.up; template is for the other kinds"),
	Entry("a template subject over 1,000 characters", channel("  kind: slack\n  slack: {urlSecretRef: {name: s, key: k}}\n  template: {subject: \""+strings.Repeat("s", 1001)+"\"}\n"),
		"spec.template.subject", "may not be more than 1000"),
	Entry("unknown channel kind", channel("  kind: carrier-pigeon\n"),
		"spec.kind", "Unsupported value: \"carrier-pigeon\""),
	Entry("webhook kind without webhook settings", channel("  kind: webhook\n"),
		"spec", "webhook settings are required for kind webhook"),
	Entry("slack kind with webhook settings", channel("  kind: slack\n  webhook: {down: {url: \"https://example.com\"}}\n"),
		"spec", "webhook settings are required for kind webhook and allowed only for it"),
	Entry("webhook with neither down nor up", channel("  kind: webhook\n  webhook: {}\n"),
		"spec.webhook", "a webhook needs a down request, an up request, or both"),
	Entry("webhook URL that is not http", channel("  kind: webhook\n  webhook: {down: {url: \"ftp://example.com/x\"}}\n"),
		"spec.webhook.down.url", "url must start with http:// or https://"),
	Entry("webhook with both url and urlSecretRef", channel("  kind: webhook\n  webhook: {down: {url: \"https://example.com\", urlSecretRef: {name: s, key: k}}}\n"),
		"spec.webhook.down", "set exactly one of url and urlSecretRef"),
	Entry("webhook method DELETE", channel("  kind: webhook\n  webhook: {down: {url: \"https://example.com\", method: DELETE}}\n"),
		"spec.webhook.down.method", "Unsupported value: \"DELETE\""),
	Entry("email without recipients", channel("  kind: email\n  email: {to: [], from: vigil@example.com, host: smtp.example.com}\n"),
		"spec.email.to", "should have at least 1 items"),
	Entry("slack without a secret reference", channel("  kind: slack\n  slack: {}\n"),
		"spec.slack.urlSecretRef", "Required value"),
	Entry("webhook header value over 4096 characters", channel("  kind: webhook\n  webhook: {down: {url: \"https://example.com\", headers: {X-A: \""+strings.Repeat("v", 4097)+"\"}}}\n"),
		"spec.webhook.down.headers", "values at most 4096"),
	Entry("a webhook body with 1001 $ signs", channel("  kind: webhook\n  webhook: {down: {url: \"https://example.com\", body: \""+strings.Repeat("$BODY", 1001)+"\"}}\n"),
		"spec.webhook.down.body", "a template may hold at most 1000 $ signs"),
	Entry("a webhook URL with 1001 $ signs", channel("  kind: webhook\n  webhook: {down: {url: \"https://example.com/"+strings.Repeat("$", 1001)+"\"}}\n"),
		"spec.webhook.down.url", "a template may hold at most 1000 $ signs"),
	Entry("a message template body with 1001 $ signs", channel("  kind: slack\n  slack: {urlSecretRef: {name: s, key: k}}\n  template: {body: \""+strings.Repeat("$NAME", 1001)+"\"}\n"),
		"spec.template.body", "a template may hold at most 1000 $ signs"),
	Entry("webhook Host header", channel("  kind: webhook\n  webhook: {down: {url: \"https://example.com\", headers: {Host: metadata.google.internal}}}\n"),
		"spec.webhook.down.headers", "a Channel cannot set the Host header"),
	Entry("webhook Host header in another case", channel("  kind: webhook\n  webhook: {up: {url: \"https://example.com\", headers: {X-A: b, hOST: internal}}}\n"),
		"spec.webhook.up.headers", "a Channel cannot set the Host header"),
	Entry("webhook Host header from a Secret", channel("  kind: webhook\n  webhook: {down: {url: \"https://example.com\", headerSecretRefs: {HOST: {name: s, key: k}}}}\n"),
		"spec.webhook.down.headerSecretRefs", "a Channel cannot set the Host header"),
	Entry("alertmanager label name over 256 characters", channel("  kind: alertmanager\n  alertmanager: {url: \"https://am.example.com\", labels: {"+strings.Repeat("l", 257)+": x}}\n"),
		"spec.alertmanager.labels", "label names may have at most 256"),
	Entry("more than 50 email recipients", channel("  kind: email\n  email: {to: ["+strings.Repeat("a@example.com,", 50)+"a@example.com], from: vigil@example.com, host: smtp.example.com}\n"),
		"spec.email.to", "must have at most 50 items"),
	Entry("telegram kind without telegram settings", channel("  kind: telegram\n  slack: {urlSecretRef: {name: s, key: k}}\n"),
		"spec", "telegram settings are required for kind telegram and allowed only for it"),
	Entry("sms number that is not E.164", channel("  kind: sms\n  sms: {credentialsSecretRef: {name: t}, from: \"+15005550006\", to: \"555-1234\"}\n"),
		"spec.sms.to", "should match"),
	Entry("telegram chat that is neither an id nor an @username", channel("  kind: telegram\n  telegram: {botTokenSecretRef: {name: s, key: k}, chatID: \"ops room\"}\n"),
		"spec.telegram.chatID", "should match"),
	Entry("a group with events of its own", channel("  kind: group\n  group: {channels: [a, b]}\n  events: [down]\n"),
		"spec", "a group Channel has no events, template or realertInterval of its own"),
	Entry("an empty group", channel("  kind: group\n  group: {channels: []}\n"),
		"spec.group.channels", "should have at least 1 items"),
	Entry("apprise with both a key and URLs", channel("  kind: apprise\n  apprise: {url: \"http://apprise:8000\", key: ops, urlsSecretRef: {name: s, key: k}}\n"),
		"spec.apprise", "set exactly one of key and urlsSecretRef"),
	Entry("jira with both Cloud and Data Center credentials", channel("  kind: jira\n  jira: {url: \"https://x.atlassian.net\", project: OPS, credentialsSecretRef: {name: s}, tokenSecretRef: {name: s, key: k}}\n"),
		"spec.jira", "set exactly one of credentialsSecretRef (Jira Cloud) and tokenSecretRef (Jira Data Center)"),
	Entry("jira without credentials", channel("  kind: jira\n  jira: {url: \"https://x.atlassian.net\", project: OPS}\n"),
		"spec.jira", "set exactly one of credentialsSecretRef (Jira Cloud) and tokenSecretRef (Jira Data Center)"),
	Entry("jira project key in lowercase", channel("  kind: jira\n  jira: {url: \"https://x.atlassian.net\", project: ops, tokenSecretRef: {name: s, key: k}}\n"),
		"spec.jira.project", "should match"),
	Entry("jira label with a space", channel("  kind: jira\n  jira: {url: \"https://x.atlassian.net\", project: OPS, tokenSecretRef: {name: s, key: k}, labels: [\"on call\"]}\n"),
		"spec.jira.labels[0]", "should match"),
	Entry("pushover emergency expiring before its first retry", channel("  kind: pushover\n  pushover: {tokenSecretRef: {name: s, key: t}, userKeySecretRef: {name: s, key: u}, priority: 2, retry: 600, expire: 300}\n"),
		"spec.pushover", "expire must not be shorter than retry"),
	Entry("github repository without an owner", channel("  kind: github\n  github: {repository: ops, tokenSecretRef: {name: s, key: k}}\n"),
		"spec.github.repository", "should match"),
	Entry("zulip direct message with a topic", channel("  kind: zulip\n  zulip: {site: \"https://z.example.com\", botEmail: b@example.com, apiKeySecretRef: {name: s, key: k}, type: private, to: a@example.com, topic: t}\n"),
		"spec.zulip", "topic is for type stream only"),
	Entry("opsgenie region that does not exist", channel("  kind: opsgenie\n  opsgenie: {apiKeySecretRef: {name: s, key: k}, region: asia}\n"),
		"spec.opsgenie.region", "Unsupported value"),
	Entry("matrix room that is neither an id nor an alias", channel("  kind: matrix\n  matrix: {homeserver: \"https://m.example.org\", room: ops, accessTokenSecretRef: {name: s, key: k}}\n"),
		"spec.matrix.room", "should match"),
	Entry("ntfy priority 6", channel("  kind: ntfy\n  ntfy: {url: \"https://ntfy.sh/x\", priority: 6}\n"),
		"spec.ntfy.priority", "less than or equal to 5"),
	Entry("discord thread name over 100 characters", channel("  kind: discord\n  discord: {urlSecretRef: {name: s, key: k}, threadName: \""+strings.Repeat("é", 101)+"\"}\n"),
		"spec.discord.threadName", "may not be more than 100"),
	Entry("sns topic ARN of another service", channel("  kind: sns\n  sns: {topicARN: \"arn:aws:sqs:us-east-1:123456789012:vigil\", credentialsSecretRef: {name: s}}\n"),
		"spec.sns.topicARN", "should match"),
	Entry("sns endpoint that is not http", channel("  kind: sns\n  sns: {topicARN: \"arn:aws:sns:us-east-1:123456789012:vigil\", credentialsSecretRef: {name: s}, endpoint: \"ftp://sns.example.com\"}\n"),
		"spec.sns.endpoint", "endpoint must start with http:// or https://"),
	Entry("blank discord thread name", channel("  kind: discord\n  discord: {urlSecretRef: {name: s, key: k}, threadName: \"  \"}\n"),
		"spec.discord.threadName", "threadName must not be blank"),
	Entry("email auth xoauth2 without oauth2 settings", channel("  kind: email\n  email: {to: [a@example.com], from: vigil@example.com, host: smtp.example.com, auth: xoauth2}\n"),
		"spec.email", "oauth2 settings are required for auth xoauth2 and allowed only with it"),
	Entry("email oauth2 settings with auth login", channel("  kind: email\n  email: {to: [a@example.com], from: vigil@example.com, host: smtp.example.com, auth: login, credentialsSecretRef: {name: s}, oauth2: {username: a@example.com, tokenURL: \"https://t.example.com/token\", clientID: c, clientSecretRef: {name: s, key: k}}}\n"),
		"spec.email", "oauth2 settings are required for auth xoauth2 and allowed only with it"),
	Entry("email xoauth2 with a password too", channel("  kind: email\n  email: {to: [a@example.com], from: vigil@example.com, host: smtp.example.com, auth: xoauth2, credentialsSecretRef: {name: s}, oauth2: {username: a@example.com, tokenURL: \"https://t.example.com/token\", clientID: c, clientSecretRef: {name: s, key: k}}}\n"),
		"spec.email", "leave credentialsSecretRef unset"),
	Entry("email auth login without credentials", channel("  kind: email\n  email: {to: [a@example.com], from: vigil@example.com, host: smtp.example.com, auth: login}\n"),
		"spec.email", "auth plain and login need credentialsSecretRef"),
	Entry("email auth that does not exist", channel("  kind: email\n  email: {to: [a@example.com], from: vigil@example.com, host: smtp.example.com, auth: cram-md5, credentialsSecretRef: {name: s}}\n"),
		"spec.email.auth", "Unsupported value"),
	Entry("email token URL that is not http(s)", channel("  kind: email\n  email: {to: [a@example.com], from: vigil@example.com, host: smtp.example.com, auth: xoauth2, oauth2: {username: a@example.com, tokenURL: \"ftp://t.example.com/token\", clientID: c, clientSecretRef: {name: s, key: k}}}\n"),
		"spec.email.oauth2.tokenURL", "tokenURL must start with https:// or http://"),
)

var _ = Describe("Check uuid", func() {
	It("cannot be changed once set, so the ping URL stays stable", func() {
		ns := newNamespace()
		Expect(apply(ns, check("  uuid: 5d5f3e70-1c6d-4b6c-9c3a-1f0d2e3c4b5a\n"))).To(Succeed())
		var c monitoringv1alpha1.Check
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bad"}, &c)).To(Succeed())
		c.Spec.UUID = "00000000-1c6d-4b6c-9c3a-1f0d2e3c4b5a"
		err := k8sClient.Update(ctx, &c)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("uuid is immutable"))
	})
})

var _ = Describe("CronJobPolicy validation", func() {
	DescribeTable("refuses bad defaults with the API server's message",
		func(spec, message string) {
			err := apply(newNamespace(), "apiVersion: monitoring.vigil.dev/v1alpha1\nkind: CronJobPolicy\nmetadata: {name: p}\nspec: "+spec+"\n")
			Expect(err).To(MatchError(ContainSubstring(message)))
		},
		Entry("grace too short", `{grace: 10s}`, "grace must be between 1m and 8760h"),
		Entry("grace not a duration", `{grace: soon}`, "spec.grace"),
		Entry("maxSuspended too short", `{maxSuspended: 30s}`, "maxSuspended must be between 1m and 8784h"),
		Entry("all channels and a name", `{channels: ["*", ops]}`, `"*" (all channels) cannot be combined`),
		Entry("a failure threshold past 100", `{failureThreshold: 200}`, "spec.failureThreshold"),
	)
	It("needs a namespace selector on a cluster policy", func() {
		err := apply("", "apiVersion: monitoring.vigil.dev/v1alpha1\nkind: ClusterCronJobPolicy\nmetadata: {name: no-selector}\nspec: {}\n")
		Expect(err).To(MatchError(ContainSubstring("namespaceSelector")))
	})
})
