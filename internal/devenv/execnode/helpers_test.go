package execnode

import "testing"

func TestRewrite(t *testing.T) {
	mnt := newMounts(map[string]string{"/opt/vigil": "/tmp/p/volumes/vigil", "/opt/vigil/data": "/tmp/p/volumes/data", "/work": "/tmp/p/volumes/work"})
	tests := []struct{ in, want string }{
		{"/opt/vigil", "/tmp/p/volumes/vigil"},
		{"/opt/vigil/vigil", "/tmp/p/volumes/vigil/vigil"},
		{"/opt/vigil/data/x", "/tmp/p/volumes/data/x"},
		{"/opt/vigilant", "/opt/vigilant"},
		{"/usr/opt/vigil", "/usr/opt/vigil"},
		{"test -x /opt/vigil/vigil && cd /work; ls '/work/a b'", "test -x /tmp/p/volumes/vigil/vigil && cd /tmp/p/volumes/work; ls '/tmp/p/volumes/work/a b'"},
		{"--out=/work/out.txt", "--out=/tmp/p/volumes/work/out.txt"},
		{"PATH=/bin:/opt/vigil", "PATH=/bin:/tmp/p/volumes/vigil"},
		{"no paths here", "no paths here"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := mnt.rewrite(tt.in); got != tt.want {
			t.Errorf("rewrite(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "URL": "http://x/ping/u"}
	tests := []struct{ in, want string }{
		{"$(A)", "1"},
		{"$(URL)/start", "http://x/ping/u/start"},
		{"$$(A)", "$(A)"},
		{"$(MISSING)", "$(MISSING)"},
		{"$A and $(A", "$A and $(A"},
		{"cost: 5$", "cost: 5$"},
		{"x$(A)y$(A)z", "x1y1z"},
	}
	for _, tt := range tests {
		if got := expand(tt.in, vars); got != tt.want {
			t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTail(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 1, "c\n"},
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc\n", 5, "a\nb\nc\n"},
		{"a\nb\nc", 1, "c"},
		{"a\nb\nc\n", 0, ""},
		{"", 3, ""},
	}
	for _, tt := range tests {
		if got := string(tail([]byte(tt.in), tt.n)); got != tt.want {
			t.Errorf("tail(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
