package notify

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// A group sends nothing itself: a delivery named after it (none should be,
// the checks package expands groups) fails for good, saying why.
func TestGroupSendsNothingItself(t *testing.T) {
	ch := testChannel(v1.ChannelSpec{Kind: v1.ChannelGroup, Group: &v1.GroupChannel{Channels: []string{"a", "b"}}})
	err := send(t, ch, downMessage(), nil)
	if !errors.Is(err, ErrGroup) || !IsPermanent(err) {
		t.Errorf("Send through a group = %v, want a permanent ErrGroup", err)
	}
	k, _ := Lookup(v1.ChannelGroup)
	if refs := k.SecretRefs(&ch.Spec); len(refs) != 0 {
		t.Errorf("a group references Secrets: %v", refs)
	}
}

// SendTest sends a test message, marked as such, about the stand-in check
// or the check given.
func TestSendTest(t *testing.T) {
	srv := newRecorder(t, 200, "")
	ch := chatChannel(v1.ChannelSlack)
	d := Delivery{Secret: secretMap(map[string]string{"chat/url": srv.URL + "/hook"}), Egress: loopbackEgress}
	if err := SendTest(t.Context(), nil, ch, nil, d); err != nil {
		t.Fatal(err)
	}
	info := downMessage().Check
	if err := SendTest(t.Context(), nil, ch, &info, d); err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[0].Body), "[Test] “Test check”") ||
		!strings.Contains(string(reqs[1].Body), "[Test] “Nightly backup”") || !strings.Contains(string(reqs[1].Body), info.DetailsURL) {
		t.Errorf("requests: %+v", reqs)
	}
}

// A test through an incident tracker resolves what it opened.
func TestSendTestResolvesATrackersTest(t *testing.T) {
	srv := newRecorder(t, http.StatusAccepted, "")
	ch := testChannel(v1.ChannelSpec{Kind: v1.ChannelPagerDuty, PagerDuty: &v1.PagerDutyChannel{
		URL: srv.URL + "/v2/enqueue", RoutingKeySecretRef: ref("pd", "key")}})
	d := Delivery{Secret: secretMap(map[string]string{"pd/key": pdRoutingKey}), Egress: loopbackEgress}
	if err := SendTest(t.Context(), nil, ch, nil, d); err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[0].Body), `"event_action":"trigger"`) ||
		!strings.Contains(string(reqs[1].Body), `"event_action":"resolve"`) ||
		!strings.Contains(string(reqs[1].Body), `"dedup_key":"vigil-test-`) {
		t.Errorf("requests: %+v", reqs)
	}
}
