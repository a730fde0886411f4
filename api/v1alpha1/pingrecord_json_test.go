package v1alpha1

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPingRecordIsStoredAsOneString(t *testing.T) {
	exit := int32(3)
	rec := PingRecord{N: 7, Type: PingFail, Date: metav1.NewMicroTime(time.Date(2026, 11, 23, 9, 30, 0, 123456000, time.UTC)),
		Scheme: "https", RemoteAddr: "10.0.0.1", Method: "POST", UA: `curl/8 "quoted"`, RID: "r", ExitStatus: &exit,
		Body: []byte("line\n\x00binary"), BodyDropped: false}
	h := CheckHistory{Pings: []PingRecord{rec}}
	raw, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var shape struct {
		Pings []any `json:"pings"`
	}
	if err := json.Unmarshal(raw, &shape); err != nil {
		t.Fatal(err)
	}
	inner, ok := shape.Pings[0].(string)
	if !ok {
		t.Fatalf("a ping is stored as %T, want a string: %s", shape.Pings[0], raw)
	}
	if !strings.Contains(inner, `"n":7`) || !strings.Contains(inner, `"type":"fail"`) {
		t.Errorf("the string does not hold the record's JSON: %s", inner)
	}
	var back CheckHistory
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(back.Pings, h.Pings) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back.Pings, h.Pings)
	}
}

func TestPingRecordReadsTheObjectFormOfEarlierVersions(t *testing.T) {
	raw := `{"pings":[{"n":1,"type":"success","date":"2026-11-23T09:30:00.000001Z","method":"GET","body":"aGk="},
		"{\"n\":2,\"type\":\"start\",\"date\":\"2026-11-23T09:31:00.000000Z\"}"]}`
	var h CheckHistory
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		t.Fatal(err)
	}
	if len(h.Pings) != 2 || h.Pings[0].N != 1 || h.Pings[0].Method != "GET" || string(h.Pings[0].Body) != "hi" ||
		h.Pings[1].N != 2 || h.Pings[1].Type != PingStart {
		t.Errorf("decoded %+v", h.Pings)
	}
}

func TestPingRecordRejectsGarbage(t *testing.T) {
	for _, raw := range []string{`{"pings":[42]}`, `{"pings":["not json"]}`, `{"pings":["{\"n\":\"x\"}"]}`} {
		var h CheckHistory
		if err := json.Unmarshal([]byte(raw), &h); err == nil {
			t.Errorf("%s decoded without an error: %+v", raw, h.Pings)
		}
	}
}
