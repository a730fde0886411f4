package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ChannelKind is the integration a Channel delivers through. The list grows
// as integrations are added; each kind has its own settings field in
// ChannelSpec.
// +kubebuilder:validation:Enum=webhook;slack;email;msteams;discord;ntfy;pagerduty;alertmanager;opsgenie;victorops;pagertree;spike;sms;whatsapp;call;signal;pushover;pushbullet;gotify;telegram;matrix;mattermost;rocketchat;zulip;googlechat;github;trello;jira;group;apprise;sns
type ChannelKind string

const (
	// ChannelWebhook sends an HTTP request built from templates.
	ChannelWebhook ChannelKind = "webhook"
	// ChannelSlack posts to a Slack incoming webhook.
	ChannelSlack ChannelKind = "slack"
	// ChannelEmail sends an email through an SMTP server.
	ChannelEmail ChannelKind = "email"
	// ChannelMSTeams posts to a Microsoft Teams workflow webhook.
	ChannelMSTeams ChannelKind = "msteams"
	// ChannelDiscord posts to a Discord webhook.
	ChannelDiscord ChannelKind = "discord"
	// ChannelNtfy publishes to an ntfy topic.
	ChannelNtfy ChannelKind = "ntfy"
	// ChannelPagerDuty triggers and resolves PagerDuty incidents (Events API v2).
	ChannelPagerDuty ChannelKind = "pagerduty"
	// ChannelAlertmanager posts alerts to a Prometheus Alertmanager (API v2).
	ChannelAlertmanager ChannelKind = "alertmanager"
)

// SecretKeyRef selects one key of a Secret in the Channel's own namespace.
type SecretKeyRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key within the Secret's data.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// WebhookRequest is one HTTP request of a webhook channel. URL, body and
// header values may use the variables $NAME, $NAME_JSON (the name as a JSON
// string), $SLUG, $STATUS ("up" or "down"), $NOW (the flip's time), $TAGS,
// $TAG1.., $CODE (the check's UUID), $DESC, $PING_URL, $EXITSTATUS (of the
// last ping, -1 when none) and $JSON (the check as JSON); the body also
// $BODY and $BODY_JSON (an excerpt of the last ping body, as text and as a
// JSON string). Vigil adds $SUMMARY ("backup is still DOWN (for 2 h)"),
// $REASON (fail, timeout, runtime or short), $REASON_TEXT (the reason in
// words) and $NOTICE (realert, escalation, failure, maintenance-start or
// maintenance-end; empty for a flip).
// Values are percent-encoded in the URL.
// +kubebuilder:validation:XValidation:rule="has(self.url) != has(self.urlSecretRef)",message="set exactly one of url and urlSecretRef"
type WebhookRequest struct {
	// URL to call.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="url must start with http:// or https://"
	// +kubebuilder:validation:XValidation:rule="size(self) - size(self.replace('$', '')) <= 1000",message="a template may hold at most 1000 $ signs"
	URL string `json:"url,omitempty"`
	// URLSecretRef reads the URL from a Secret, for URLs that carry a token.
	// +optional
	URLSecretRef *SecretKeyRef `json:"urlSecretRef,omitempty"`
	// Method is the HTTP method.
	// +optional
	// +kubebuilder:default=POST
	// +kubebuilder:validation:Enum=GET;POST;PUT
	Method string `json:"method,omitempty"`
	// Body is the request body template. Expanded, it may be at most 1
	// MiB; past that the delivery fails and says so.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	// +kubebuilder:validation:XValidation:rule="size(self) - size(self.replace('$', '')) <= 1000",message="a template may hold at most 1000 $ signs"
	Body string `json:"body,omitempty"`
	// Headers are extra request headers (templates): names of at most 256
	// characters, values of at most 4096, which may expand to 8 KiB all
	// together. Host is not one of them: the
	// request goes to the URL's host, under its name.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 256 && size(self[k]) <= 4096)",message="header names may have at most 256 characters and values at most 4096"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.lowerAscii() != 'host')",message="a Channel cannot set the Host header: the request goes to the URL's host"
	Headers map[string]string `json:"headers,omitempty"`
	// HeaderSecretRefs are extra request headers whose values come from
	// Secrets, for credentials such as Authorization. Host is not one of
	// them.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 256)",message="header names may have at most 256 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.lowerAscii() != 'host')",message="a Channel cannot set the Host header: the request goes to the URL's host"
	HeaderSecretRefs map[string]SecretKeyRef `json:"headerSecretRefs,omitempty"`
}

// WebhookChannel settings: one request when a check goes down and another
// when it comes back up; omit either to send nothing for that event.
// +kubebuilder:validation:XValidation:rule="has(self.down) || has(self.up)",message="a webhook needs a down request, an up request, or both"
type WebhookChannel struct {
	// Down is the request sent when a check goes down.
	// +optional
	Down *WebhookRequest `json:"down,omitempty"`
	// Up is the request sent when a check comes back up.
	// +optional
	Up *WebhookRequest `json:"up,omitempty"`
}

// IncomingWebhookChannel settings for the services whose integration is one
// URL that Vigil posts to (Slack, Microsoft Teams, Discord, Mattermost,
// Rocket.Chat, Google Chat, Splunk On-Call, Spike): the URL is a
// credential, so it is read from a Secret.
type IncomingWebhookChannel struct {
	// URLSecretRef selects the Secret key holding the webhook URL.
	URLSecretRef SecretKeyRef `json:"urlSecretRef"`
}

// DiscordChannel settings: a webhook's URL, read from a Secret, and for
// the webhook of a forum or media channel the name of the post each
// notification starts there.
type DiscordChannel struct {
	IncomingWebhookChannel `json:",inline"`
	// ThreadName is the title of the post each notification starts, for
	// the webhook of a forum or media channel, which refuses messages
	// without one (or without a ?thread_id= in its URL). Leave it unset
	// for a text channel's webhook, or one whose URL names a thread.
	// Discord takes at most 100 characters.
	// +optional
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:XValidation:rule="self.trim() != ''",message="threadName must not be blank: leave it unset for a text channel's webhook"
	ThreadName string `json:"threadName,omitempty"`
}

// SMTPSecurity is how an SMTP connection is secured.
// +kubebuilder:validation:Enum=starttls;tls;none
type SMTPSecurity string

const (
	// SMTPStartTLS upgrades a plain connection with STARTTLS (port 587).
	SMTPStartTLS SMTPSecurity = "starttls"
	// SMTPTLS connects with implicit TLS (port 465).
	SMTPTLS SMTPSecurity = "tls"
	// SMTPNone sends in the clear; only for servers on a trusted network.
	SMTPNone SMTPSecurity = "none"
)

// SMTPAuth is the SASL mechanism an email Channel authenticates with.
// +kubebuilder:validation:Enum=auto;plain;login;xoauth2
type SMTPAuth string

const (
	// SMTPAuthAuto uses PLAIN when the server offers it, else LOGIN, with
	// the username and password of credentialsSecretRef.
	SMTPAuthAuto SMTPAuth = "auto"
	// SMTPAuthPlain uses AUTH PLAIN, and fails if the server does not offer it.
	SMTPAuthPlain SMTPAuth = "plain"
	// SMTPAuthLogin uses AUTH LOGIN (Exchange Online, many hosting providers).
	SMTPAuthLogin SMTPAuth = "login"
	// SMTPAuthXOAuth2 sends an OAuth 2.0 access token (AUTH XOAUTH2),
	// obtained with the client-credentials grant of the oauth2 settings.
	SMTPAuthXOAuth2 SMTPAuth = "xoauth2"
)

// SMTPOAuth2 obtains the access tokens of an email Channel with auth
// xoauth2, with the OAuth 2.0 client-credentials grant (RFC 6749, 4.4).
type SMTPOAuth2 struct {
	// Username is the mailbox the token is used for (the XOAUTH2 "user"),
	// for example alerts@contoso.com.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=254
	Username string `json:"username"`
	// TokenURL is the authorization server's token endpoint, for example
	// https://login.microsoftonline.com/<tenant id>/oauth2/v2.0/token.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://') || self.startsWith('http://')",message="tokenURL must start with https:// or http://"
	TokenURL string `json:"tokenURL"`
	// ClientID is the application's (client's) id.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	ClientID string `json:"clientID"`
	// ClientSecretRef names the Secret key that holds the client secret.
	ClientSecretRef SecretKeyRef `json:"clientSecretRef"`
	// Scopes are the scopes asked for, for example
	// https://outlook.office365.com/.default for Exchange Online.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=256
	Scopes []string `json:"scopes,omitempty"`
}

// EmailChannel settings.
// +kubebuilder:validation:XValidation:rule="(has(self.auth) && self.auth == 'xoauth2') == has(self.oauth2)",message="oauth2 settings are required for auth xoauth2 and allowed only with it"
// +kubebuilder:validation:XValidation:rule="!(has(self.auth) && self.auth == 'xoauth2' && has(self.credentialsSecretRef))",message="auth xoauth2 authenticates with the oauth2 settings' token: leave credentialsSecretRef unset"
// +kubebuilder:validation:XValidation:rule="!(has(self.auth) && (self.auth == 'plain' || self.auth == 'login')) || has(self.credentialsSecretRef)",message="auth plain and login need credentialsSecretRef"
type EmailChannel struct {
	// To are the recipients.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MaxLength=254
	To []string `json:"to"`
	// From is the sender address.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=254
	From string `json:"from"`
	// Host is the SMTP server's host name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Host string `json:"host"`
	// Port is the SMTP server's port. Defaults to the port of the security
	// mode: 587 for starttls, 465 for tls, 25 for none.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`
	// Security is how the connection is secured.
	// +optional
	// +kubebuilder:default=starttls
	Security SMTPSecurity `json:"security,omitempty"`
	// CredentialsSecretRef names a Secret with "username" and "password"
	// keys for SMTP authentication.
	// +optional
	CredentialsSecretRef *LocalSecretRef `json:"credentialsSecretRef,omitempty"`
	// Auth is how the client authenticates: auto (the default: PLAIN when
	// the server offers it, else LOGIN, with credentialsSecretRef), plain,
	// login, or xoauth2 (an OAuth 2.0 access token from the oauth2
	// settings). Without credentials or xoauth2 the client does not
	// authenticate.
	// +optional
	Auth SMTPAuth `json:"auth,omitempty"`
	// OAuth2 obtains the access tokens of auth xoauth2.
	// +optional
	OAuth2 *SMTPOAuth2 `json:"oauth2,omitempty"`
	// Reports asks for a report of the project's checks after each week
	// (Monday to Monday, UTC) or each month (UTC): each check's uptime,
	// runs, failures, missed runs, slowest runs and trend, as text and
	// HTML. Sent once per period, by the leader, five minutes after its end.
	// +optional
	Reports ReportPeriod `json:"reports,omitempty"`
}

// ReportPeriod is how often a Channel is sent a project report.
// +kubebuilder:validation:Enum=weekly;monthly
type ReportPeriod string

const (
	// ReportWeekly: a report after each week, Monday 00:00 UTC to Monday.
	ReportWeekly ReportPeriod = "weekly"
	// ReportMonthly: a report after each calendar month (UTC).
	ReportMonthly ReportPeriod = "monthly"
)

// LocalSecretRef names a Secret in the Channel's own namespace.
type LocalSecretRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// NtfyChannel settings.
type NtfyChannel struct {
	// URL is the topic URL, for example https://ntfy.sh/my-alerts.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="url must start with http:// or https://"
	URL string `json:"url"`
	// Priority of down notifications, 1 (min) to 5 (max); up notifications
	// use the default priority 3.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	Priority int32 `json:"priority,omitempty"`
	// TokenSecretRef selects an access token for protected topics.
	// +optional
	TokenSecretRef *SecretKeyRef `json:"tokenSecretRef,omitempty"`
}

// PagerDutyChannel settings.
type PagerDutyChannel struct {
	// RoutingKeySecretRef selects the integration's routing key.
	RoutingKeySecretRef SecretKeyRef `json:"routingKeySecretRef"`
	// URL is the Events API v2 endpoint.
	// +optional
	// +kubebuilder:default="https://events.pagerduty.com/v2/enqueue"
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="url must start with http:// or https://"
	// +kubebuilder:validation:XValidation:rule="size(self) - size(self.replace('$', '')) <= 1000",message="a template may hold at most 1000 $ signs"
	URL string `json:"url,omitempty"`
}

// AlertmanagerChannel settings.
type AlertmanagerChannel struct {
	// URL is the Alertmanager's base URL, for example
	// http://alertmanager.monitoring:9093; alerts go to <url>/api/v2/alerts.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="url must start with http:// or https://"
	URL string `json:"url"`
	// Labels are added to every alert: names of at most 256 characters,
	// values of at most 4096.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 256 && size(self[k]) <= 4096)",message="label names may have at most 256 characters and values at most 4096"
	Labels map[string]string `json:"labels,omitempty"`
	// BearerTokenSecretRef selects a bearer token for an Alertmanager behind
	// an authenticating proxy.
	// +optional
	BearerTokenSecretRef *SecretKeyRef `json:"bearerTokenSecretRef,omitempty"`
}

// ChannelSpec is a notification target that checks in the same namespace can
// be assigned to. Exactly the settings field named by kind must be set.
//
// +kubebuilder:validation:XValidation:rule="(self.kind == 'webhook') == has(self.webhook)",message="webhook settings are required for kind webhook and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'slack') == has(self.slack)",message="slack settings are required for kind slack and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'email') == has(self.email)",message="email settings are required for kind email and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'msteams') == has(self.msteams)",message="msteams settings are required for kind msteams and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'discord') == has(self.discord)",message="discord settings are required for kind discord and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'ntfy') == has(self.ntfy)",message="ntfy settings are required for kind ntfy and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'pagerduty') == has(self.pagerduty)",message="pagerduty settings are required for kind pagerduty and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'alertmanager') == has(self.alertmanager)",message="alertmanager settings are required for kind alertmanager and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'opsgenie') == has(self.opsgenie)",message="opsgenie settings are required for kind opsgenie and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'victorops') == has(self.victorops)",message="victorops settings are required for kind victorops and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'pagertree') == has(self.pagertree)",message="pagertree settings are required for kind pagertree and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'spike') == has(self.spike)",message="spike settings are required for kind spike and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'sms') == has(self.sms)",message="sms settings are required for kind sms and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'whatsapp') == has(self.whatsapp)",message="whatsapp settings are required for kind whatsapp and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'call') == has(self.call)",message="call settings are required for kind call and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'signal') == has(self.signal)",message="signal settings are required for kind signal and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'pushover') == has(self.pushover)",message="pushover settings are required for kind pushover and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'pushbullet') == has(self.pushbullet)",message="pushbullet settings are required for kind pushbullet and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'gotify') == has(self.gotify)",message="gotify settings are required for kind gotify and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'telegram') == has(self.telegram)",message="telegram settings are required for kind telegram and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'matrix') == has(self.matrix)",message="matrix settings are required for kind matrix and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'mattermost') == has(self.mattermost)",message="mattermost settings are required for kind mattermost and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'rocketchat') == has(self.rocketchat)",message="rocketchat settings are required for kind rocketchat and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'zulip') == has(self.zulip)",message="zulip settings are required for kind zulip and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'googlechat') == has(self.googlechat)",message="googlechat settings are required for kind googlechat and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'github') == has(self.github)",message="github settings are required for kind github and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'trello') == has(self.trello)",message="trello settings are required for kind trello and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'jira') == has(self.jira)",message="jira settings are required for kind jira and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'group') == has(self.group)",message="group settings are required for kind group and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'apprise') == has(self.apprise)",message="apprise settings are required for kind apprise and allowed only for it"
// +kubebuilder:validation:XValidation:rule="(self.kind == 'sns') == has(self.sns)",message="sns settings are required for kind sns and allowed only for it"
// +kubebuilder:validation:XValidation:rule="self.kind != 'group' || (!has(self.events) && !has(self.template) && !has(self.realertInterval))",message="a group Channel has no events, template or realertInterval of its own: each member follows its own"
// +kubebuilder:validation:XValidation:rule="!has(self.template) || self.kind != 'webhook'",message="a webhook Channel words its requests in webhook.down and webhook.up; template is for the other kinds"
type ChannelSpec struct {
	// Kind is the integration this channel delivers through.
	Kind ChannelKind `json:"kind"`

	// DisplayName is the name the Management API shows and name-based
	// assignment (channels: "Ops Slack") matches. To be usable for
	// name-based assignment it must be unique in the namespace and contain
	// no comma. Defaults to the object's name.
	// +optional
	// +kubebuilder:validation:MaxLength=100
	DisplayName string `json:"displayName,omitempty"`

	// Events are what this Channel is told of: "down" (every down), "up",
	// "realert" (a check still down, at its realertInterval), "failure" (a
	// failed run counted below a check's failureThreshold), "toolong" and
	// "tooshort" (a down or a failed run because a run was longer than
	// maxRuntime or shorter than minRuntime: for a Channel that wants only
	// those), and "maintenance" (a MaintenanceWindow started or ended
	// holding a check's notifications), and "sla" (a check's SLA breached,
	// or met again: only checks that set spec.sla have one). Default: down,
	// up, realert and sla.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	Events []ChannelEvent `json:"events,omitempty"`

	// Template is this Channel's own wording of its notifications, for
	// every kind but webhook (which has its own templates).
	// +optional
	Template *MessageTemplate `json:"template,omitempty"`

	// RealertInterval re-alerts this Channel at its own interval ("4h")
	// about checks that stay down, in place of their realertInterval.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('8784h')",message="realertInterval must be between 1m and 8784h (366 days)"
	RealertInterval *metav1.Duration `json:"realertInterval,omitempty"`

	// +optional
	Webhook *WebhookChannel `json:"webhook,omitempty"`
	// +optional
	Slack *IncomingWebhookChannel `json:"slack,omitempty"`
	// +optional
	Email *EmailChannel `json:"email,omitempty"`
	// +optional
	MSTeams *IncomingWebhookChannel `json:"msteams,omitempty"`
	// +optional
	Discord *DiscordChannel `json:"discord,omitempty"`
	// +optional
	Ntfy *NtfyChannel `json:"ntfy,omitempty"`
	// +optional
	PagerDuty *PagerDutyChannel `json:"pagerduty,omitempty"`
	// +optional
	Alertmanager *AlertmanagerChannel `json:"alertmanager,omitempty"`
	// +optional
	Opsgenie *OpsgenieChannel `json:"opsgenie,omitempty"`
	// +optional
	VictorOps *IncomingWebhookChannel `json:"victorops,omitempty"`
	// +optional
	PagerTree *PagerTreeChannel `json:"pagertree,omitempty"`
	// +optional
	Spike *IncomingWebhookChannel `json:"spike,omitempty"`
	// +optional
	SMS *TwilioChannel `json:"sms,omitempty"`
	// +optional
	WhatsApp *WhatsAppChannel `json:"whatsapp,omitempty"`
	// +optional
	Call *TwilioChannel `json:"call,omitempty"`
	// +optional
	Signal *SignalChannel `json:"signal,omitempty"`
	// +optional
	Pushover *PushoverChannel `json:"pushover,omitempty"`
	// +optional
	Pushbullet *PushbulletChannel `json:"pushbullet,omitempty"`
	// +optional
	Gotify *GotifyChannel `json:"gotify,omitempty"`
	// +optional
	Telegram *TelegramChannel `json:"telegram,omitempty"`
	// +optional
	Matrix *MatrixChannel `json:"matrix,omitempty"`
	// +optional
	Mattermost *IncomingWebhookChannel `json:"mattermost,omitempty"`
	// +optional
	RocketChat *IncomingWebhookChannel `json:"rocketchat,omitempty"`
	// +optional
	Zulip *ZulipChannel `json:"zulip,omitempty"`
	// +optional
	GoogleChat *IncomingWebhookChannel `json:"googlechat,omitempty"`
	// +optional
	GitHub *GitHubChannel `json:"github,omitempty"`
	// +optional
	Trello *TrelloChannel `json:"trello,omitempty"`
	// +optional
	Jira *JiraChannel `json:"jira,omitempty"`
	// +optional
	Group *GroupChannel `json:"group,omitempty"`
	// +optional
	Apprise *AppriseChannel `json:"apprise,omitempty"`
	// +optional
	SNS *SNSChannel `json:"sns,omitempty"`
}

// MessageTemplate words a Channel's notifications with the webhook's
// variables: $NAME, $SLUG, $STATUS, $NOW, $TAGS, $TAG1.., $CODE, $DESC,
// $PING_URL, $EXITSTATUS, $BODY (an excerpt of the last ping body),
// $SUMMARY ("backup is still DOWN (for 2 h)"), $REASON, $REASON_TEXT,
// $NOTICE and $DETAILS_URL (the check's dashboard page). What it leaves
// unset stays Vigil's own; the facts, the link and the body excerpt are
// shown as ever.
type MessageTemplate struct {
	// Subject takes the place of the headline: the title of a chat
	// message, an email's subject, an ntfy title, a PagerDuty or
	// Alertmanager summary. One line: line breaks become spaces, and it is
	// cut at 250 bytes.
	// +optional
	// +kubebuilder:validation:MaxLength=1000
	Subject string `json:"subject,omitempty"`

	// Body takes the place of the reason line under the headline (cut at
	// 4,000 bytes once expanded).
	// +optional
	// +kubebuilder:validation:MaxLength=10000
	// +kubebuilder:validation:XValidation:rule="size(self) - size(self.replace('$', '')) <= 1000",message="a template may hold at most 1000 $ signs"
	Body string `json:"body,omitempty"`
}

// ChannelEvent is a kind of notification a Channel may take.
// +kubebuilder:validation:Enum=down;up;realert;failure;toolong;tooshort;maintenance;sla
type ChannelEvent string

// The events a Channel may take.
const (
	ChannelEventDown        ChannelEvent = "down"
	ChannelEventUp          ChannelEvent = "up"
	ChannelEventRealert     ChannelEvent = "realert"
	ChannelEventFailure     ChannelEvent = "failure"
	ChannelEventTooLong     ChannelEvent = "toolong"
	ChannelEventTooShort    ChannelEvent = "tooshort"
	ChannelEventMaintenance ChannelEvent = "maintenance"
	ChannelEventSLA         ChannelEvent = "sla"
)

// Delivery records one notification attempt.
type Delivery struct {
	// Time of the attempt.
	Time metav1.Time `json:"time"`
	// Check is the name of the check the notification was about.
	Check string `json:"check"`
	// Up is true for a "came up" notification and false for a "went down" one.
	Up bool `json:"up"`
	// Error is why the attempt failed; empty when it succeeded.
	// +optional
	Error string `json:"error,omitempty"`
}

// ChannelStatus is the observed state of a Channel.
type ChannelStatus struct {
	// ObservedGeneration is the generation the controller last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready is true when the channel's settings and the Secrets
	// it references are usable.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// LastDelivery is the most recent delivery attempt.
	// +optional
	LastDelivery *Delivery `json:"lastDelivery,omitempty"`

	// LastError is the most recent delivery error.
	// +optional
	LastError string `json:"lastError,omitempty"`

	// LastErrorTime is when lastError happened.
	// +optional
	LastErrorTime *metav1.Time `json:"lastErrorTime,omitempty"`
}

// Channel is a notification target (webhook, Slack, email, ...) that checks
// in its namespace can be assigned to.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=chan,categories=vigil
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.kind`
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.spec.displayName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Last Delivery",type=date,JSONPath=`.status.lastDelivery.time`
// +kubebuilder:printcolumn:name="Last Error",type=string,JSONPath=`.status.lastError`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Channel struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ChannelSpec `json:"spec"`
	// +optional
	Status ChannelStatus `json:"status,omitempty"`
}

// ChannelList is a list of Channels.
//
// +kubebuilder:object:root=true
type ChannelList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Channel `json:"items"`
}
