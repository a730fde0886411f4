package v1alpha1

import "testing"

func TestCheckSpecAssigns(t *testing.T) {
	tests := []struct {
		channels []string
		name     string
		want     bool
	}{
		{nil, "ops", false},
		{[]string{"ops", "dev"}, "dev", true},
		{[]string{"ops"}, "dev", false},
		{[]string{"*"}, "anything", true},
	}
	for _, tt := range tests {
		s := CheckSpec{Channels: tt.channels}
		if got := s.Assigns(tt.name); got != tt.want {
			t.Errorf("%v assigns %q = %v, want %v", tt.channels, tt.name, got, tt.want)
		}
	}
}
