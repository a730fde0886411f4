package servertest

import (
	"net/http"
	"strings"
	"testing"
)

// TestRequestBounds: a key in the X-Api-Key header is checked before the
// body is read, and a body without one is read up to 128 KiB only.
func TestRequestBounds(t *testing.T) {
	s := suite(t)
	update := "/api/v3/checks/" + s.uuid
	// Unknown keys are ignored: a body this long is only padding.
	padded := func(n int, key string) []byte {
		head := `{"desc": "padded", `
		if key != "" {
			head += `"api_key": "` + key + `", `
		}
		return []byte(head + `"pad": "` + strings.Repeat("x", n) + `"}`)
	}
	tests := []struct {
		name, method, path, header string
		body                       []byte
		status                     int
		errorText                  string
	}{
		{name: "key in the body, 100 KiB", method: "POST", path: update, body: padded(100<<10, s.rw), status: http.StatusOK},
		{name: "key in the body, 200 KiB", method: "POST", path: update, body: padded(200<<10, s.rw),
			status: http.StatusRequestEntityTooLarge, errorText: "at most 131072 bytes without an X-Api-Key header"},
		{name: "key in the header, 2 MB", method: "POST", path: update, header: "X-Api-Key: " + s.rw, body: padded(2_000_000, ""),
			status: http.StatusOK},
		{name: "key in the header, over 2.5 MB", method: "POST", path: update, header: "X-Api-Key: " + s.rw, body: padded(2_700_000, ""),
			status: http.StatusRequestEntityTooLarge, errorText: "request body too large"},
		{name: "wrong key in the header: not read", method: "POST", path: update, header: "X-Api-Key: " + strings.Repeat("a", 32),
			body: []byte("{oops"), status: http.StatusUnauthorized, errorText: "wrong api key"},
		{name: "read-only key in the header: not read", method: "POST", path: update, header: "X-Api-Key: " + s.ro,
			body: padded(1<<20, ""), status: http.StatusForbidden},
		{name: "no key: malformed body first, as the reference", method: "POST", path: update + "/pause", body: []byte("123"),
			status: http.StatusBadRequest, errorText: "json validation error"},
		{name: "no key at all", method: "POST", path: update + "/pause", body: []byte("{}"),
			status: http.StatusUnauthorized, errorText: "missing api key"},
		{name: "a ping body over the limit is cut, not refused", method: "POST", path: "/ping/" + s.uuid,
			body: []byte(strings.Repeat("x", 200_000)), status: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := send(s.addr, tt.method, tt.path, tt.header, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if r.StatusCode != tt.status || !strings.Contains(string(r.body), tt.errorText) {
				t.Errorf("%d %s, want %d with %q", r.StatusCode, r.body, tt.status, tt.errorText)
			}
		})
	}
}
