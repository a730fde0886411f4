package benchutil

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
)

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// Dashboard is a browser signed in to the dashboard with an API key.
type Dashboard struct {
	base string
	hc   *http.Client
}

// SignIn signs in to the dashboard at base as a browser does: the sign-in
// form's CSRF token, then the session cookie.
func SignIn(ctx context.Context, base, key string) (*Dashboard, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	d := &Dashboard{base: base, hc: &http.Client{Jar: jar}}
	form, _ := d.Get(ctx, "/") // the sign-in page: 401 with the form
	m := csrfRE.FindSubmatch(form)
	if m == nil {
		return nil, fmt.Errorf("no sign-in form at /")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/login",
		strings.NewReader(url.Values{"key": {key}, "csrf": {string(m[1])}}.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := d.hc.Do(req)
	if err != nil {
		return nil, err
	}
	_ = resp.Body.Close()
	return d, nil
}

// Get reads a dashboard page, header being name, value pairs; an answer
// other than 200 is an error.
func (d *Dashboard) Get(ctx context.Context, path string, header ...string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.base+path, nil)
	if err != nil {
		return nil, err
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := d.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s answered %d", path, resp.StatusCode)
	}
	return b, err
}

// Fragment is the header the board's script sends for its live part.
var Fragment = []string{"X-Vigil-Fragment", "1"}
