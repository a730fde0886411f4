package checks

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func TestChannelIndexExpandsGroups(t *testing.T) {
	ch := func(ns, name string, members ...string) *v1.Channel {
		c := &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ChannelSpec{Kind: v1.ChannelSlack}}
		if members != nil {
			c.Spec = v1.ChannelSpec{Kind: v1.ChannelGroup, Group: &v1.GroupChannel{Channels: members}}
		}
		return c
	}
	var x channelIndex
	for _, c := range []*v1.Channel{
		ch("a", "slack"), ch("a", "pager"), ch("a", "mail"),
		ch("a", "oncall", "pager", "slack", "missing"),
		ch("a", "everyone", "oncall", "mail"), // a group in a group is not followed
		ch("b", "slack"), ch("b", "oncall", "slack", "pager"),
	} {
		x.update(c, true)
	}
	for _, tc := range []struct {
		ns    string
		names []string
		want  []string
	}{
		{"a", []string{"slack"}, []string{"slack"}},
		{"a", []string{"oncall"}, []string{"pager", "slack"}},
		{"a", []string{"oncall", "slack"}, []string{"pager", "slack"}},
		{"a", []string{"everyone"}, []string{"mail"}},
		{"a", []string{"everyone", "mail", "oncall", "pager", "slack"}, []string{"mail", "pager", "slack"}},
		{"b", []string{"oncall"}, []string{"slack"}}, // pager is a's, not b's
		{"a", nil, nil},
	} {
		if got := x.expand(tc.ns, tc.names); !slices.Equal(got, tc.want) {
			t.Errorf("expand(%s, %v) = %v, want %v", tc.ns, tc.names, got, tc.want)
		}
	}

	// A group that becomes an ordinary Channel, or goes, expands no more.
	x.update(ch("a", "oncall"), true)
	if got := x.expand("a", []string{"oncall"}); !slices.Equal(got, []string{"oncall"}) {
		t.Errorf("after oncall stopped being a group: %v", got)
	}
	x.update(ch("b", "oncall", "slack"), false)
	if len(x.groups) != 1 {
		t.Errorf("groups left: %v, want a/everyone only", x.groups)
	}
}
