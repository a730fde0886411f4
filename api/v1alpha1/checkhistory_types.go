package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PingRecord is one entry of a check's ping log. It is stored as one
// string holding the record's JSON ({"n":1,"type":"success",...}): the
// API server then handles a ping as a single scalar instead of decoding,
// validating and re-encoding each field of each of the last 100 pings on
// every write, which was most of the cost of a ping (docs/performance.md).
// Records stored as objects, by earlier versions, are read too.
// +kubebuilder:validation:Type=string
// +kubebuilder:validation:MaxLength=1048576
type PingRecord struct {
	// N is the ping's serial number within the check (1, 2, ...).
	N int64 `json:"n"`
	// Type is what the ping signalled.
	Type PingType `json:"type"`
	// Date is when the ping arrived, with microseconds.
	Date metav1.MicroTime `json:"date"`
	// Scheme is http, https or email.
	// +optional
	Scheme string `json:"scheme,omitempty"`
	// RemoteAddr is the client's address.
	// +optional
	RemoteAddr string `json:"remoteAddr,omitempty"`
	// Method is the HTTP method ("" for email).
	// +optional
	Method string `json:"method,omitempty"`
	// UA is the user agent, at most 200 characters.
	// +optional
	UA string `json:"ua,omitempty"`
	// RID is the run identifier that pairs a start with its completion.
	// +optional
	RID string `json:"rid,omitempty"`
	// ExitStatus is the exit status the ping URL carried (/ping/<uuid>/<n>).
	// +optional
	ExitStatus *int32 `json:"exitStatus,omitempty"`
	// Body is the ping's body, truncated to the ping body limit. Older
	// bodies are dropped first when the history exceeds its byte budget.
	// +optional
	Body []byte `json:"body,omitempty"`
	// BodyDropped is true when the ping had a body that was later dropped
	// to keep the history within its byte budget.
	// +optional
	BodyDropped bool `json:"bodyDropped,omitempty"`
}

// DeliveryState is where one notification of a flip to one channel stands.
// +kubebuilder:validation:Enum=Pending;Delivered;Failed
type DeliveryState string

const (
	// DeliveryPending: not delivered yet; will be (re)tried.
	DeliveryPending DeliveryState = "Pending"
	// DeliveryDelivered: the channel accepted the notification.
	DeliveryDelivered DeliveryState = "Delivered"
	// DeliveryFailed: the retry limit was reached.
	DeliveryFailed DeliveryState = "Failed"
)

// FlipDelivery tracks the notification of one flip to one channel.
type FlipDelivery struct {
	// Channel is the Channel object's name.
	Channel string `json:"channel"`
	// State of the delivery.
	State DeliveryState `json:"state"`
	// Attempts made so far.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// NextAttempt is when a pending delivery is tried next.
	// +optional
	NextAttempt *metav1.Time `json:"nextAttempt,omitempty"`
	// LastError is why the last attempt failed.
	// +optional
	LastError string `json:"lastError,omitempty"`
}

// FlipRecord is one entry of a check's flip log.
type FlipRecord struct {
	Flip `json:",inline"`
	// From is the state the check left.
	// +optional
	From CheckState `json:"from,omitempty"`
	// To is the state the check entered.
	// +optional
	To CheckState `json:"to,omitempty"`
	// Deliveries are the notifications this flip owes its check's channels.
	// +optional
	Deliveries []FlipDelivery `json:"deliveries,omitempty"`
}

// CheckHistory is the ping log and flip log of one Check. It has the check's
// name, is owned by it (deleting the check deletes its history) and is
// created on the first ping or flip. History is kept out of the Check's
// status so that status stays small and fast to write; the Management API
// reads it only when a client asks for pings, a ping body or flips.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=chkhist
// +kubebuilder:printcolumn:name="Pings",type=integer,JSONPath=`.lastN`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CheckHistory struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// LastN is the serial number of the newest ping ever recorded: the
	// source of truth for the check's ping count.
	// +optional
	LastN int64 `json:"lastN,omitempty"`
	// Pings are the most recent pings, oldest first, at most the project's
	// ping-log limit.
	// +optional
	Pings []PingRecord `json:"pings,omitempty"`
	// Flips are the state changes between up and down, oldest first.
	// +optional
	Flips []FlipRecord `json:"flips,omitempty"`
}

// CheckHistoryList is a list of CheckHistory objects.
//
// +kubebuilder:object:root=true
type CheckHistoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CheckHistory `json:"items"`
}
