package httpserver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// chunked hides a reader's length, as a client sending chunks does.
type chunked struct{ io.Reader }

func TestReadBody(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		chunked bool
		limit   int64
		want    string
		wantErr error
		charged int64 // what the budget holds until release
	}{
		{name: "empty", body: "", limit: 10, want: ""},
		{name: "small, not charged", body: "hello", limit: 10, want: "hello"},
		{name: "over the limit", body: "hello world", limit: 5, want: "hello", wantErr: ErrBodyTooLarge},
		{name: "at the limit", body: "hello", limit: 5, want: "hello"},
		{name: "chunked over the limit", body: "hello world", chunked: true, limit: 5, want: "hello", wantErr: ErrBodyTooLarge},
		{name: "large: its length is charged", body: strings.Repeat("x", 10_000), limit: 100_000,
			want: strings.Repeat("x", 10_000), charged: 10_000},
		{name: "large and chunked: the limit is charged", body: strings.Repeat("x", 10_000), chunked: true, limit: 100_000,
			want: strings.Repeat("x", 10_000), charged: 100_001},
		{name: "declared larger than the limit", body: strings.Repeat("x", 10_000), limit: 5_000,
			want: strings.Repeat("x", 5_000), wantErr: ErrBodyTooLarge, charged: 5_001},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tt.body)
			if tt.chunked {
				body = chunked{body}
			}
			r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/", body)
			b := NewBodyBudget(1 << 20)
			data, release, err := b.ReadBody(r, tt.limit)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if string(data) != tt.want {
				t.Errorf("data = %q, want %q", data, tt.want)
			}
			if got := b.InUse(); got != tt.charged {
				t.Errorf("charged %d, want %d", got, tt.charged)
			}
			release()
			release() // twice gives back once
			if got := b.InUse(); got != 0 {
				t.Errorf("after release: %d in use", got)
			}
		})
	}
}

func TestReadBodyBudgetFull(t *testing.T) {
	b := NewBodyBudget(20_000)
	large := func() *http.Request {
		return httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/", strings.NewReader(strings.Repeat("x", 15_000)))
	}
	_, release, err := b.ReadBody(large(), 100_000)
	if err != nil {
		t.Fatal(err)
	}
	// No room for another large body: refused after the wait.
	if _, _, err := b.ReadBody(large(), 100_000); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second large body: err = %v, want ErrBusy", err)
	}
	// A small body costs the connection's buffer only and is never refused.
	small := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/", strings.NewReader("ok"))
	if data, _, err := b.ReadBody(small, 100_000); err != nil || string(data) != "ok" {
		t.Fatalf("a small body: %q, %v", data, err)
	}
	// A waiting body gets the room released meanwhile.
	done := make(chan error)
	go func() {
		_, rel, err := b.ReadBody(large(), 100_000)
		rel()
		done <- err
	}()
	release()
	if err := <-done; err != nil {
		t.Fatalf("after release: %v", err)
	}
	// A nil budget charges nothing.
	var none *BodyBudget
	if data, _, err := none.ReadBody(large(), 100_000); err != nil || len(data) != 15_000 {
		t.Fatalf("nil budget: %d bytes, %v", len(data), err)
	}
}
