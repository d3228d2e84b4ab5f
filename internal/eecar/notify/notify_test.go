package notify

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/quarrydb/quarry/ddb"
	"github.com/quarrydb/quarry/internal/eecar/store"
)

func TestWebhookDelivery(t *testing.T) {
	ctx := context.Background()
	db, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	client := ddb.NewClient(db)
	table, err := store.EnsureTable(ctx, client, "")
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(client, table, nil)

	var mu sync.Mutex
	var got []store.Notification
	var ids []string
	attempts := 0
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		attempts++
		if attempts == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable) // retried
			return
		}
		body, _ := io.ReadAll(r.Body)
		var n store.Notification
		if err := json.Unmarshal(body, &n); err != nil {
			t.Errorf("body %s: %v", body, err)
		}
		got = append(got, n)
		ids = append(ids, r.Header.Get("X-EECAR-Notification-Id"))
	}))
	defer hook.Close()

	buyer, _, err := st.CreateCompany(ctx, "Busan ESS", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetWebhook(ctx, buyer.ID, hook.URL); err != nil {
		t.Fatal(err)
	}
	quiet, _, _ := st.CreateCompany(ctx, "No Hook", "")

	w := New(st, hook.Client(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	w.backoff = 10 * time.Millisecond
	w.Notify(ctx, store.Notification{ID: "ntf_1", RecipientID: buyer.ID, Type: "part_available", Title: "t"})
	w.Notify(ctx, store.Notification{ID: "ntf_2", RecipientID: quiet.ID, Type: "part_available", Title: "t"})
	w.Wait()

	mu.Lock()
	defer mu.Unlock()
	if attempts != 2 || len(got) != 1 || got[0].ID != "ntf_1" || ids[0] != "ntf_1" {
		t.Fatalf("attempts %d, delivered %+v (ids %v): want one delivery after one retry, none for the company without a webhook", attempts, got, ids)
	}
}

// TestWebhookSurvivesItsProcess: a process writes a notification (with
// its outbox item) and dies before delivering it. Another process's sweep
// leaves it alone while the writer's reservation holds, then delivers it
// once, under its notification id, and the outbox is then empty.
func TestWebhookSurvivesItsProcess(t *testing.T) {
	ctx := context.Background()
	db, err := ddb.Open(t.TempDir(), &ddb.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	client := ddb.NewClient(db)
	table, err := store.EnsureTable(ctx, client, "")
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(client, table, nil)
	var mu sync.Mutex
	got := map[string]int{}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.Header.Get("X-EECAR-Notification-Id")]++
		mu.Unlock()
	}))
	defer hook.Close()
	buyer, _, err := st.CreateCompany(ctx, "Busan ESS", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetWebhook(ctx, buyer.ID, hook.URL); err != nil {
		t.Fatal(err)
	}
	// The writer dies: it wrote the notification and never delivered it.
	n, err := st.Notify(ctx, store.Notification{RecipientID: buyer.ID, Type: "part_available", Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	survivor := New(st, hook.Client(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	survivor.Sweep(ctx, time.Now())
	survivor.Wait()
	if len(got) != 0 {
		t.Fatalf("the sweep took a notification its writer still has reserved: %v", got)
	}
	later := time.Now().Add(store.WebhookGrace + time.Second)
	survivor.Sweep(ctx, later)
	survivor.Wait()
	survivor.Sweep(ctx, later.Add(time.Minute))
	survivor.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[n.ID] != 1 {
		t.Fatalf("deliveries %v, want notification %s delivered once by the survivor", got, n.ID)
	}
	if left, err := st.DueWebhooks(ctx, later.Add(time.Hour), 10); err != nil || len(left) != 0 {
		t.Fatalf("outbox after delivery: %+v %v", left, err)
	}
}
