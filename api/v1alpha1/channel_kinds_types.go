package v1alpha1

// The settings of the integrations beyond the first eight (channel_types.go):
// paging services, phones, chat, work trackers, fan-out. Every credential is
// read from a Secret of the Channel's namespace; every URL that names a
// provider's public API defaults to it and may be set for a self-hosted or
// proxied endpoint.

// The kinds added with the integrations issue. Their names are the
// reference's, so clients that switch on a channel's kind find them; the
// Management API shows pushover as "po", the reference's name.
const (
	// ChannelOpsgenie creates and closes Opsgenie alerts (Alert API v2).
	ChannelOpsgenie ChannelKind = "opsgenie"
	// ChannelVictorOps opens and recovers Splunk On-Call (VictorOps)
	// incidents through its REST endpoint integration.
	ChannelVictorOps ChannelKind = "victorops"
	// ChannelPagerTree creates and resolves PagerTree alerts.
	ChannelPagerTree ChannelKind = "pagertree"
	// ChannelSpike triggers and resolves Spike.sh incidents.
	ChannelSpike ChannelKind = "spike"
	// ChannelSMS sends a text message through Twilio.
	ChannelSMS ChannelKind = "sms"
	// ChannelWhatsApp sends a WhatsApp message through Twilio.
	ChannelWhatsApp ChannelKind = "whatsapp"
	// ChannelCall places a voice call through Twilio.
	ChannelCall ChannelKind = "call"
	// ChannelSignal sends a Signal message through a signal-cli REST API.
	ChannelSignal ChannelKind = "signal"
	// ChannelPushover sends a Pushover notification.
	ChannelPushover ChannelKind = "pushover"
	// ChannelPushbullet pushes a note through Pushbullet.
	ChannelPushbullet ChannelKind = "pushbullet"
	// ChannelGotify posts a message to a Gotify server.
	ChannelGotify ChannelKind = "gotify"
	// ChannelTelegram sends a message through a Telegram bot.
	ChannelTelegram ChannelKind = "telegram"
	// ChannelMatrix sends a message to a Matrix room.
	ChannelMatrix ChannelKind = "matrix"
	// ChannelMattermost posts to a Mattermost incoming webhook.
	ChannelMattermost ChannelKind = "mattermost"
	// ChannelRocketChat posts to a Rocket.Chat incoming webhook.
	ChannelRocketChat ChannelKind = "rocketchat"
	// ChannelZulip sends a Zulip message to a stream topic or to people.
	ChannelZulip ChannelKind = "zulip"
	// ChannelGoogleChat posts to a Google Chat space webhook.
	ChannelGoogleChat ChannelKind = "googlechat"
	// ChannelGitHub opens a GitHub issue on down, and comments on and closes
	// it on up.
	ChannelGitHub ChannelKind = "github"
	// ChannelTrello adds a Trello card on down, and comments on it on up.
	ChannelTrello ChannelKind = "trello"
	// ChannelJira opens a Jira (or Jira Service Management) issue on down,
	// and comments on it and transitions it on up.
	ChannelJira ChannelKind = "jira"
	// ChannelGroup notifies other Channels of its namespace.
	ChannelGroup ChannelKind = "group"
	// ChannelApprise posts to an Apprise API server.
	ChannelApprise ChannelKind = "apprise"
	// ChannelSNS publishes to an Amazon SNS topic.
	ChannelSNS ChannelKind = "sns"
)

// OpsgenieChannel settings: an API integration's key. A down creates an
// alert and the matching up closes it, both under the alias
// "vigil-<check uuid>".
type OpsgenieChannel struct {
	// APIKeySecretRef selects the API integration's key.
	APIKeySecretRef SecretKeyRef `json:"apiKeySecretRef"`
	// Region is the Opsgenie instance: us (api.opsgenie.com) or eu
	// (api.eu.opsgenie.com).
	// +optional
	// +kubebuilder:default=us
	// +kubebuilder:validation:Enum=us;eu
	Region string `json:"region,omitempty"`
	// URL replaces the region's API base URL (alerts go to
	// <url>/v2/alerts): for Jira Service Management's operations API
	// (https://api.atlassian.com/jsm/ops/integration), Opsgenie's
	// successor, or a proxy.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="url must start with http:// or https://"
	URL string `json:"url,omitempty"`
	// Priority of the alerts, P1 (critical) to P5 (informational).
	// +optional
	// +kubebuilder:default=P3
	// +kubebuilder:validation:Enum=P1;P2;P3;P4;P5
	Priority string `json:"priority,omitempty"`
}

// PagerTreeChannel settings.
type PagerTreeChannel struct {
	// URLSecretRef selects the Secret key holding the integration's
	// webhook URL (https://api.pagertree.com/integration/int_...).
	URLSecretRef SecretKeyRef `json:"urlSecretRef"`
	// Urgency of the alerts.
	// +optional
	// +kubebuilder:default=high
	// +kubebuilder:validation:Enum=low;medium;high;critical
	Urgency string `json:"urgency,omitempty"`
	// TokenSecretRef selects the integration's token, for an integration
	// that requires one (sent as the pagertree-token header).
	// +optional
	TokenSecretRef *SecretKeyRef `json:"tokenSecretRef,omitempty"`
}

// TwilioChannel settings, for SMS and voice calls: a Twilio account's
// credentials, the number Vigil sends from and the number it reaches.
type TwilioChannel struct {
	// CredentialsSecretRef names a Secret with the keys "accountSID" and
	// "authToken".
	CredentialsSecretRef LocalSecretRef `json:"credentialsSecretRef"`
	// From is the Twilio number to send from, in E.164 form (+15551234567).
	// +kubebuilder:validation:Pattern=`^\+[1-9][0-9]{6,14}$`
	From string `json:"from"`
	// To is the number to reach, in E.164 form.
	// +kubebuilder:validation:Pattern=`^\+[1-9][0-9]{6,14}$`
	To string `json:"to"`
	// URL replaces Twilio's API base URL (https://api.twilio.com).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="url must start with http:// or https://"
	URL string `json:"url,omitempty"`
}

// WhatsAppChannel settings: Twilio's, and the approved content templates
// WhatsApp requires of a message a business starts. Without them the
// message is sent as free text, which WhatsApp delivers only within 24
// hours of the recipient's last message.
type WhatsAppChannel struct {
	TwilioChannel `json:",inline"`
	// DownContentSID is the Twilio content template (HX...) of down
	// notifications; its variable {{1}} is the check's name.
	// +optional
	// +kubebuilder:validation:Pattern=`^HX[0-9a-f]{32}$`
	DownContentSID string `json:"downContentSID,omitempty"`
	// UpContentSID is the template of up notifications, as DownContentSID.
	// +optional
	// +kubebuilder:validation:Pattern=`^HX[0-9a-f]{32}$`
	UpContentSID string `json:"upContentSID,omitempty"`
}

// SignalChannel settings: a signal-cli REST API server
// (bbernhard/signal-cli-rest-api), the registered number it sends from and
// the recipients.
type SignalChannel struct {
	// URL is the REST API's base URL, for example
	// http://signal-cli.signal:8080; messages go to <url>/v2/send.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="url must start with http:// or https://"
	URL string `json:"url"`
	// Number is the registered sender, in E.164 form.
	// +kubebuilder:validation:Pattern=`^\+[1-9][0-9]{6,14}$`
	Number string `json:"number"`
	// Recipients are phone numbers (E.164), usernames or group ids
	// ("group.<id>").
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	Recipients []string `json:"recipients"`
	// TokenSecretRef selects a bearer token, for a server behind an
	// authenticating proxy.
	// +optional
	TokenSecretRef *SecretKeyRef `json:"tokenSecretRef,omitempty"`
}

// PushoverChannel settings.
// +kubebuilder:validation:XValidation:rule="self.priority != 2 || self.expire >= self.retry",message="expire must not be shorter than retry"
type PushoverChannel struct {
	// TokenSecretRef selects the Pushover application's API token.
	TokenSecretRef SecretKeyRef `json:"tokenSecretRef"`
	// UserKeySecretRef selects the user or group key to notify.
	UserKeySecretRef SecretKeyRef `json:"userKeySecretRef"`
	// Priority of down notifications: -2 (lowest) to 2 (emergency:
	// repeated every retry seconds until acknowledged or expire passes).
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=-2
	// +kubebuilder:validation:Maximum=2
	Priority int32 `json:"priority"`
	// UpPriority of up notifications, -2 to 1.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=-2
	// +kubebuilder:validation:Maximum=1
	UpPriority int32 `json:"upPriority"`
	// Retry is how often, in seconds, an emergency notification repeats
	// (at least 30).
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=30
	// +kubebuilder:validation:Maximum=10800
	Retry int32 `json:"retry,omitempty"`
	// Expire is how long, in seconds, an emergency notification repeats
	// (at most 10800).
	// +optional
	// +kubebuilder:default=3600
	// +kubebuilder:validation:Minimum=30
	// +kubebuilder:validation:Maximum=10800
	Expire int32 `json:"expire,omitempty"`
	// Sound is the name of a Pushover sound.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z0-9_-]*$`
	Sound string `json:"sound,omitempty"`
	// URL replaces Pushover's API base URL (https://api.pushover.net).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="url must start with http:// or https://"
	URL string `json:"url,omitempty"`
}

// PushbulletChannel settings.
type PushbulletChannel struct {
	// TokenSecretRef selects the account's access token.
	TokenSecretRef SecretKeyRef `json:"tokenSecretRef"`
	// DeviceIden pushes to one device only; empty pushes to all of them.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	DeviceIden string `json:"deviceIden,omitempty"`
	// URL replaces Pushbullet's API base URL (https://api.pushbullet.com).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="url must start with http:// or https://"
	URL string `json:"url,omitempty"`
}

// GotifyChannel settings.
type GotifyChannel struct {
	// URL is the Gotify server's base URL; messages go to <url>/message.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="url must start with http:// or https://"
	URL string `json:"url"`
	// TokenSecretRef selects the application's token.
	TokenSecretRef SecretKeyRef `json:"tokenSecretRef"`
	// Priority of down notifications, 0 (silent) to 10; up notifications
	// are sent at 5.
	// +optional
	// +kubebuilder:default=8
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	Priority int32 `json:"priority"`
}

// TelegramChannel settings: a bot and the chat it writes to.
type TelegramChannel struct {
	// BotTokenSecretRef selects the bot's token (from @BotFather).
	BotTokenSecretRef SecretKeyRef `json:"botTokenSecretRef"`
	// ChatID is the chat's numeric id (negative for groups) or a public
	// channel's @username.
	// +kubebuilder:validation:Pattern=`^(-?[0-9]{1,20}|@[A-Za-z][A-Za-z0-9_]{3,31})$`
	ChatID string `json:"chatID"`
	// MessageThreadID posts into a forum topic of the chat.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MessageThreadID int64 `json:"messageThreadID,omitempty"`
	// URL replaces the Bot API's base URL (https://api.telegram.org), for a
	// local Bot API server.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="url must start with http:// or https://"
	URL string `json:"url,omitempty"`
}

// MatrixChannel settings: a homeserver, a room the account has joined and
// the account's access token.
type MatrixChannel struct {
	// Homeserver is the homeserver's base URL, for example
	// https://matrix-client.matrix.org.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="homeserver must start with http:// or https://"
	Homeserver string `json:"homeserver"`
	// Room is the room's id (!abc:example.org, or !abc without a server
	// in room version 12) or alias (#ops:example.org).
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^(![^\s]+|#[^:\s]+:\S+)$`
	Room string `json:"room"`
	// AccessTokenSecretRef selects the account's access token.
	AccessTokenSecretRef SecretKeyRef `json:"accessTokenSecretRef"`
}

// ZulipChannel settings: a bot's credentials and where it writes.
// +kubebuilder:validation:XValidation:rule="self.type == 'stream' || !has(self.topic)",message="topic is for type stream only"
type ZulipChannel struct {
	// Site is the Zulip organization's URL, for example
	// https://example.zulipchat.com.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="site must start with http:// or https://"
	Site string `json:"site"`
	// BotEmail is the bot's email address.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=254
	BotEmail string `json:"botEmail"`
	// APIKeySecretRef selects the bot's API key.
	APIKeySecretRef SecretKeyRef `json:"apiKeySecretRef"`
	// Type is stream (a stream's topic) or private (a direct message).
	// +optional
	// +kubebuilder:default=stream
	// +kubebuilder:validation:Enum=stream;private
	Type string `json:"type,omitempty"`
	// To is the stream's name, or the recipients' email addresses separated
	// by commas.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1000
	To string `json:"to"`
	// Topic of stream messages; default: the check's name, so a check's
	// downs and ups share a topic.
	// +optional
	// +kubebuilder:validation:MaxLength=60
	Topic string `json:"topic,omitempty"`
}

// GitHubChannel settings: a repository and a token that may write its
// issues.
type GitHubChannel struct {
	// Repository is "owner/name".
	// +kubebuilder:validation:MaxLength=140
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`
	Repository string `json:"repository"`
	// TokenSecretRef selects a token with read and write access to the
	// repository's issues (a fine-grained token, or a GitHub App's
	// installation token).
	TokenSecretRef SecretKeyRef `json:"tokenSecretRef"`
	// Labels are put on the issues Vigil opens.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=50
	Labels []string `json:"labels,omitempty"`
	// URL replaces the API's base URL (https://api.github.com), for GitHub
	// Enterprise Server (https://github.example.com/api/v3).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="url must start with http:// or https://"
	URL string `json:"url,omitempty"`
}

// TrelloChannel settings: a list to add cards to and the credentials of a
// member who may.
type TrelloChannel struct {
	// CredentialsSecretRef names a Secret with the keys "apiKey" and
	// "token".
	CredentialsSecretRef LocalSecretRef `json:"credentialsSecretRef"`
	// ListID is the id of the list cards are added to.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{24}$`
	ListID string `json:"listID"`
	// URL replaces Trello's API base URL (https://api.trello.com).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="url must start with http:// or https://"
	URL string `json:"url,omitempty"`
}

// JiraChannel settings: a Jira site, the project issues are opened in,
// and an account that may create, comment on and transition them there:
// an Atlassian account's email and API token for Jira Cloud, or a
// personal access token for Jira Data Center (and Server). Which one is
// set also tells Vigil which of the two it talks to.
// +kubebuilder:validation:XValidation:rule="has(self.credentialsSecretRef) != has(self.tokenSecretRef)",message="set exactly one of credentialsSecretRef (Jira Cloud) and tokenSecretRef (Jira Data Center)"
type JiraChannel struct {
	// URL is the site's base URL: https://your-org.atlassian.net for Jira
	// Cloud, or a Data Center instance's base URL with its context path
	// (https://jira.example.com/jira).
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="url must start with http:// or https://"
	URL string `json:"url"`
	// CredentialsSecretRef names a Secret with the keys "email" and
	// "apiToken": an Atlassian account's email and one of its API tokens
	// (id.atlassian.com), for Jira Cloud (sent as basic auth).
	// +optional
	CredentialsSecretRef *LocalSecretRef `json:"credentialsSecretRef,omitempty"`
	// TokenSecretRef selects a personal access token, for Jira Data
	// Center and Server 8.14 or later (sent as a bearer token).
	// +optional
	TokenSecretRef *SecretKeyRef `json:"tokenSecretRef,omitempty"`
	// Project is the key of the project issues are opened in (OPS).
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Z0-9_]+$`
	Project string `json:"project"`
	// IssueType names the type of the issues Vigil opens: Task, Bug, or
	// Incident in a Jira Service Management project. It must be one the
	// project has.
	// +optional
	// +kubebuilder:default=Task
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	IssueType string `json:"issueType,omitempty"`
	// Priority names the priority of the issues Vigil opens (High); the
	// project's default when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Priority string `json:"priority,omitempty"`
	// Labels are put on the issues Vigil opens, beside vigil-<check uuid>
	// (how Vigil finds its issue again) and the check's tags. A Jira label
	// holds no spaces.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
	// +kubebuilder:validation:items:Pattern=`^\S+$`
	Labels []string `json:"labels,omitempty"`
	// ResolveTransition names the workflow transition that resolves an
	// issue when its check comes back up (Done, Resolve Issue), in any
	// case; it must lead to a status of the Done category. When empty, an
	// up only comments, and the issue stays the check's until people
	// resolve it.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	ResolveTransition string `json:"resolveTransition,omitempty"`
}

// GroupChannel settings: other Channels of the namespace. A check assigned
// to the group is notified through each of them, as if assigned to each
// (once, when also assigned to one directly), and each follows its own
// events and realertInterval.
type GroupChannel struct {
	// Channels are the names of the member Channels; a member that is a
	// group is not followed further.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	Channels []string `json:"channels"`
}

// AppriseChannel settings: an Apprise API server (caronc/apprise-api) and
// either a configuration it keeps or the Apprise URLs to notify.
// +kubebuilder:validation:XValidation:rule="has(self.key) != has(self.urlsSecretRef)",message="set exactly one of key and urlsSecretRef"
type AppriseChannel struct {
	// URL is the Apprise API server's base URL, for example
	// http://apprise.apprise:8000.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="url must start with http:// or https://"
	URL string `json:"url"`
	// Key names a configuration saved on the server; messages go to
	// <url>/notify/<key>.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-]+$`
	Key string `json:"key,omitempty"`
	// URLsSecretRef selects Apprise URLs (separated by spaces or commas),
	// which carry the services' credentials; messages go to <url>/notify/.
	// +optional
	URLsSecretRef *SecretKeyRef `json:"urlsSecretRef,omitempty"`
	// Tag notifies only the URLs of a saved configuration that carry it.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Tag string `json:"tag,omitempty"`
}

// SNSChannel settings: an Amazon SNS topic and the credentials of an IAM
// identity that may publish to it (sns:Publish on the topic, nothing else).
type SNSChannel struct {
	// TopicARN is the topic's ARN, for example
	// arn:aws:sns:us-east-1:123456789012:vigil-alerts; a FIFO topic's name
	// ends in .fifo.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^arn:aws[a-z-]*:sns:[a-z0-9]+(-[a-z0-9]+)+:[0-9]{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$`
	TopicARN string `json:"topicARN"`
	// Region signs the requests and names the default endpoint; default:
	// the topic's, from topicARN.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+(-[a-z0-9]+)+$`
	Region string `json:"region,omitempty"`
	// CredentialsSecretRef names a Secret with the keys "accessKeyID" and
	// "secretAccessKey" of an access key, and "sessionToken" too for
	// temporary credentials.
	CredentialsSecretRef LocalSecretRef `json:"credentialsSecretRef"`
	// Endpoint replaces the SNS endpoint (https://sns.<region>.amazonaws.com,
	// or .amazonaws.com.cn for an aws-cn topic), for an interface VPC
	// endpoint, a partition with endpoints of its own, or a proxy.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="endpoint must start with http:// or https://"
	Endpoint string `json:"endpoint,omitempty"`
}
