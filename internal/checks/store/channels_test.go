package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarrydb/quarry/internal/checks/store"
)

// TestChannelsLifecycle: a user's channels are created, read, listed,
// updated and deleted as USER-table items of their user, another user's
// are not found, and the delivery status is kept on one line.
func TestChannelsLifecycle(t *testing.T) {
	e := newEnv(t, -1)
	ctx := context.Background()
	other, _, err := e.st.CreateUser(ctx, "other@example.com", store.TierFree)
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.st.CreateChannel(ctx, e.user.ID, store.Channel{Type: "slack", Name: "ops", Config: map[string]string{"url": "https://hooks.slack.com/x"}, Default: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.st.CreateChannel(ctx, e.user.ID, store.Channel{Type: "ntfy", Name: "phone", Config: map[string]string{"topic": "t"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.ID, "chn_") || a.ID == b.ID || a.CreatedAt == "" {
		t.Fatalf("created %+v %+v", a, b)
	}
	got, err := e.st.GetChannel(ctx, e.user.ID, a.ID)
	if err != nil || got.Type != "slack" || got.Name != "ops" || !got.Default || got.Config["url"] != "https://hooks.slack.com/x" || got.LastDelivery != nil {
		t.Fatalf("GetChannel = %+v, %v", got, err)
	}
	if _, err := e.st.GetChannel(ctx, other.ID, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another user's GetChannel = %v", err)
	}
	if l, err := e.st.ListChannels(ctx, e.user.ID); err != nil || len(l) != 2 {
		t.Fatalf("ListChannels = %+v, %v", l, err)
	}
	if l, err := e.st.ListChannels(ctx, other.ID); err != nil || len(l) != 0 {
		t.Fatalf("other's ListChannels = %+v, %v", l, err)
	}

	b.Name, b.Default, b.Config = "pager", true, map[string]string{"topic": "u", "priority": "4"}
	if up, err := e.st.UpdateChannel(ctx, e.user.ID, b); err != nil || up.Name != "pager" || !up.Default || up.Config["priority"] != "4" || up.Type != "ntfy" {
		t.Fatalf("UpdateChannel = %+v, %v", up, err)
	}
	if _, err := e.st.UpdateChannel(ctx, other.ID, b); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another user's UpdateChannel = %v", err)
	}

	at := e.clock.now()
	if err := e.st.RecordChannelDelivery(ctx, e.user.ID, a.ID, at, "slack chn: permanent failure:\nslack responded 404 "+strings.Repeat("x", 900)); err != nil {
		t.Fatal(err)
	}
	got, _ = e.st.GetChannel(ctx, e.user.ID, a.ID)
	if d := got.LastDelivery; d == nil || d.OK || strings.Contains(d.Error, "\n") || len(d.Error) > 500 || !strings.HasPrefix(d.Error, "slack chn: permanent failure: slack responded 404") {
		t.Fatalf("LastDelivery after a failure %+v", got.LastDelivery)
	}
	if err := e.st.RecordChannelDelivery(ctx, e.user.ID, a.ID, at.Add(time.Second), ""); err != nil {
		t.Fatal(err)
	}
	got, _ = e.st.GetChannel(ctx, e.user.ID, a.ID)
	if d := got.LastDelivery; d == nil || !d.OK || d.Error != "" {
		t.Fatalf("LastDelivery after a success %+v", got.LastDelivery)
	}

	if err := e.st.DeleteChannel(ctx, other.ID, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another user's DeleteChannel = %v", err)
	}
	if err := e.st.DeleteChannel(ctx, e.user.ID, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.st.DeleteChannel(ctx, e.user.ID, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second DeleteChannel = %v", err)
	}
	if err := e.st.RecordChannelDelivery(ctx, e.user.ID, a.ID, at, ""); err != nil {
		t.Fatalf("RecordChannelDelivery of a deleted channel = %v", err)
	}
	if _, err := e.st.GetChannel(ctx, e.user.ID, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a delivery recorded after the delete recreated the channel: %v", err)
	}
}

// TestChannelLimitUnderConcurrency: MaxChannels holds however many
// creates race, and a delete frees a slot.
func TestChannelLimitUnderConcurrency(t *testing.T) {
	e := newEnv(t, -1)
	ctx := context.Background()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		ok, lim  int
		firstErr error
	)
	for range store.MaxChannels + 10 {
		wg.Go(func() {
			_, err := e.st.CreateChannel(ctx, e.user.ID, store.Channel{Type: "ntfy", Name: "n", Config: map[string]string{"topic": "t"}})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, store.ErrLimit):
				lim++
			case firstErr == nil:
				firstErr = err
			}
		})
	}
	wg.Wait()
	if firstErr != nil || ok != store.MaxChannels || lim != 10 {
		t.Fatalf("%d created, %d refused by the limit, error %v", ok, lim, firstErr)
	}
	l, _ := e.st.ListChannels(ctx, e.user.ID)
	if len(l) != store.MaxChannels {
		t.Fatalf("%d channels stored", len(l))
	}
	if err := e.st.DeleteChannel(ctx, e.user.ID, l[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.CreateChannel(ctx, e.user.ID, store.Channel{Type: "ntfy", Config: map[string]string{"topic": "t"}}); err != nil {
		t.Fatalf("create after a delete = %v", err)
	}
	if _, err := e.st.CreateChannel(ctx, "usr_nobody", store.Channel{Type: "ntfy"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("create for an unknown user = %v", err)
	}
}

// TestAlertChannels: a check's own channels, else (none named, or none
// left) the user's defaults.
func TestAlertChannels(t *testing.T) {
	e := newEnv(t, -1)
	ctx := context.Background()
	mk := func(name string, def bool) store.Channel {
		c, err := e.st.CreateChannel(ctx, e.user.ID, store.Channel{Type: "ntfy", Name: name, Config: map[string]string{"topic": name}, Default: def})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	d1, _, own := mk("d1", true), mk("x", false), mk("own", false)
	names := func(c store.Check) string {
		chs, err := e.st.AlertChannels(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, ch := range chs {
			n = append(n, ch.Name)
		}
		return strings.Join(n, ",")
	}
	chk, err := e.st.CreateCheck(ctx, store.Check{UserID: e.user.ID, URL: "https://example.com/", Type: "AVAILABILITY", DelayMs: 60000, Channels: []string{own.ID, "chn_gone"}}, e.clock.now())
	if err != nil {
		t.Fatal(err)
	}
	stored, err := e.st.GetCheck(ctx, e.user.ID, chk.ID)
	if err != nil || len(stored.Channels) != 2 || stored.Channels[0] != own.ID {
		t.Fatalf("stored check channels %v, %v", stored.Channels, err)
	}
	if got := names(stored); got != "own" {
		t.Fatalf("a check's own channels: %q", got)
	}
	if got := names(store.Check{UserID: e.user.ID}); got != "d1" {
		t.Fatalf("default channels: %q", got)
	}
	if err := e.st.DeleteChannel(ctx, e.user.ID, own.ID); err != nil {
		t.Fatal(err)
	}
	if got := names(stored); got != "d1" {
		t.Fatalf("own channels all deleted: %q, want the defaults", got)
	}
	_ = d1
}
