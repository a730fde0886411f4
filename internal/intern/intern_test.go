package intern_test

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/vigil-operator/vigil/internal/intern"
)

// same reports whether two strings share their bytes.
func same(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// fresh is s in bytes of its own, as a decoder makes each string.
func fresh(s string) string { return string([]byte(s)) }

func TestString(t *testing.T) {
	long := strings.Repeat("x", intern.MaxLen+1)
	tests := []struct {
		name   string
		max    int
		before []string // asked for first
		s      string
		// shared: the answer is the copy the pool gave for s before;
		// kept: a later answer for s is this answer.
		shared, kept bool
	}{
		{name: "a string seen before is the kept copy", max: 4, before: []string{"team-a"}, s: "team-a", shared: true, kept: true},
		{name: "a new string is kept", max: 4, s: "team-a", kept: true},
		{name: "longer than MaxLen: returned as it is, not kept", max: 4, before: []string{long}, s: long},
		{name: "MaxLen exactly is kept", max: 4, before: []string{long[1:]}, s: long[1:], shared: true, kept: true},
		{name: "a full pool keeps what it has", max: 1, before: []string{"team-a", "team-b"}, s: "team-a", shared: true, kept: true},
		{name: "a full pool keeps nothing new", max: 1, before: []string{"team-a", "team-b"}, s: "team-b"},
		{name: "a pool of no room keeps nothing", max: 0, before: []string{"team-a"}, s: "team-a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := intern.NewStrings(tt.max)
			var first string
			for _, b := range tt.before {
				if got := p.String(fresh(b)); b == tt.s && first == "" {
					first = got
				}
			}
			got := p.String(fresh(tt.s))
			if got != tt.s {
				t.Fatalf("String(%q) = %q", tt.s, got)
			}
			if first != "" && same(got, first) != tt.shared {
				t.Fatalf("String(%q) shares the earlier answer: %v, want %v", tt.s, !tt.shared, tt.shared)
			}
			if later := p.String(fresh(tt.s)); same(later, got) != tt.kept {
				t.Fatalf("String(%q) was kept: %v, want %v", tt.s, !tt.kept, tt.kept)
			}
			if p.Len() > max(tt.max, 0) {
				t.Fatalf("the pool keeps %d strings, more than its %d", p.Len(), tt.max)
			}
		})
	}
	if got := intern.NewStrings(4).String(""); got != "" {
		t.Fatalf(`String("") = %q`, got)
	}
}

func TestKeepsNoLargerString(t *testing.T) {
	p := intern.NewStrings(4)
	big := strings.Repeat("y", 1<<20)
	cut := big[:10]
	got := p.String(cut)
	if got != cut {
		t.Fatalf("String = %q", got)
	}
	if same(got, cut) {
		t.Fatal("the pool kept a string cut from a larger one, which keeps all of it alive")
	}
}

func TestMap(t *testing.T) {
	p := intern.NewStrings(8)
	a := p.Map(map[string]string{fresh("team"): fresh("billing")})
	b := p.Map(map[string]string{fresh("team"): fresh("billing")})
	for k, v := range b {
		for k0, v0 := range a {
			if !same(k, k0) || !same(v, v0) {
				t.Fatal("two maps of the same labels do not share their strings")
			}
		}
	}
	if p.Map(nil) != nil {
		t.Fatal("Map(nil) is not nil")
	}
}

func TestConcurrent(t *testing.T) {
	p := intern.NewStrings(100)
	done := make(chan string, 8)
	for range 8 {
		go func() { done <- p.String(fresh("team-a")) }()
	}
	first := <-done
	for range 7 {
		if s := <-done; !same(s, first) {
			t.Fatal("two goroutines got different copies")
		}
	}
}

func TestPoolGet(t *testing.T) {
	p := intern.NewPool[string, *int](1)
	made := 0
	make := func(v int, err error) func() (*int, error) {
		return func() (*int, error) {
			made++
			if err != nil {
				return nil, err
			}
			return &v, nil
		}
	}
	if _, err := p.Get("a", make(0, errors.New("no"))); err == nil {
		t.Fatal("an error from make was not returned")
	}
	if p.Len() != 0 {
		t.Fatal("a failed make was kept")
	}
	a, _ := p.Get("a", make(1, nil))
	again, _ := p.Get("a", make(2, nil))
	if a != again || *again != 1 || made != 2 {
		t.Fatalf("the value kept for a was not shared: %d, %d, made %d times", *a, *again, made)
	}
	b, _ := p.Get("b", make(3, nil))
	b2, _ := p.Get("b", make(4, nil))
	if *b != 3 || *b2 != 4 {
		t.Fatalf("a full pool did not hand out what was made: %d, %d", *b, *b2)
	}
	if p.Len() != 1 {
		t.Fatalf("the pool keeps %d values, more than its 1", p.Len())
	}
}
