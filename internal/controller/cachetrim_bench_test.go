package controller_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/controller"
)

// BenchmarkCachedCheck prints what one Check costs in the manager's cache:
// a Check as make bench-scale applies it (labels, a description, tags, a
// schedule in a time zone, kubectl's last-applied copy) with the status
// the manager writes, decoded by the API machinery's decoder as a watch
// decodes it, 10,000 of them over 100 namespaces, held whole and after
// TrimCheck.
//
//	go test ./internal/controller -run x -bench CachedCheck -benchtime 1x
func BenchmarkCachedCheck(b *testing.B) {
	s := kruntime.NewScheme()
	if err := v1.AddToScheme(s); err != nil {
		b.Fatal(err)
	}
	decoder := serializer.NewCodecFactory(s).UniversalDeserializer()
	const n = 10_000
	raws := make([][]byte, n)
	for i := range raws {
		raws[i] = appliedCheck(fmt.Sprintf("team-%03d", i%100), i)
	}
	held := func(trim func(any) (any, error)) float64 {
		kept := make([]any, n)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i, raw := range raws {
			o, _, err := decoder.Decode(raw, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			if kept[i], err = trim(o); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(kept)
		return float64(after.HeapAlloc-before.HeapAlloc) / n
	}
	for b.Loop() {
		whole := held(func(o any) (any, error) { return o, nil })
		trimmed := held(controller.TrimCheck)
		b.ReportMetric(float64(len(raws[0])), "JSON-B/check")
		b.ReportMetric(whole, "whole-B/check")
		b.ReportMetric(trimmed, "cached-B/check")
	}
}

// appliedCheck is a Check's JSON as the API server sends it once the
// manager has written its status.
func appliedCheck(ns string, i int) []byte {
	schedule := "0 3 * * *"
	now := metav1.NewTime(time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC))
	micro := metav1.NewMicroTime(now.Time)
	uid := fmt.Sprintf("0b9c4a8e-1f5e-4c55-9a4b-%012d", i)
	c := &v1.Check{
		TypeMeta: metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "Check"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("nightly-backup-%05d", i),
			Labels: map[string]string{"app.kubernetes.io/name": "backup", "app.kubernetes.io/part-of": "billing", "team": ns, "tier": "batch"}},
		Spec: v1.CheckSpec{
			Desc: fmt.Sprintf("Nightly dump of the billing database %d to object storage, encrypted with the team's key; "+
				"page the on-call engineer when it does not finish by 04:00.", i),
			Tags: "prod backup nightly billing", Schedule: &schedule, TZ: "Europe/Riga", Grace: 3600,
		},
	}
	applied, _ := json.Marshal(c)
	c.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(applied) + "\n"}
	c.UID, c.ResourceVersion, c.Generation, c.CreationTimestamp = types.UID(uid), "123456", 1, now
	c.Status = v1.CheckStatus{ObservedGeneration: 1, UUID: uid, PingURL: "https://vigil.example.com/ping/" + uid,
		State: v1.CheckStateUp, StateSince: &micro, NextPing: &now, NPings: 1, LastPing: &micro, LastPingType: v1.PingSuccess, LastSyncTime: &now,
		Conditions: []metav1.Condition{
			{Type: v1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1.ReasonMonitoring, Message: "Vigil is monitoring this check", ObservedGeneration: 1, LastTransitionTime: now},
			{Type: v1.ConditionUp, Status: metav1.ConditionTrue, Reason: v1.ReasonCheckUp, Message: "The check is up", ObservedGeneration: 1, LastTransitionTime: now}}}
	raw, _ := json.Marshal(c)
	return raw
}
