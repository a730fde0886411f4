package sealed

import (
	"bytes"
	"errors"
	"testing"
)

func TestSealOpen(t *testing.T) {
	key, other := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	type value struct{ A string }
	v, err := Seal(key, "ctx", value{A: "x"})
	if err != nil {
		t.Fatal(err)
	}
	var got value
	if err := Open(key, "ctx", v, &got); err != nil || got.A != "x" {
		t.Fatalf("Open = %+v, %v", got, err)
	}
	flipped := []byte(v)
	flipped[len(flipped)/2] ^= 1
	for name, tc := range map[string]struct {
		key       []byte
		ctx, text string
	}{
		"another key": {other, "ctx", v}, "another context": {key, "other", v}, "changed": {key, "ctx", string(flipped)},
		"cut": {key, "ctx", v[:10]}, "not base64": {key, "ctx", "%%%"}, "empty": {key, "ctx", ""},
	} {
		if err := Open(tc.key, tc.ctx, tc.text, &got); !errors.Is(err, ErrNotSealed) {
			t.Errorf("%s: Open = %v, want ErrNotSealed", name, err)
		}
	}
}
