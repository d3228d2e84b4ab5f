// Package api is EECAR's REST API, mounted at /eecar. Every request
// carries a company's API key (Authorization: Bearer ek_…, or X-API-Key);
// errors are JSON {"error": "..."}.
package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/quarrydb/quarry/internal/eecar/market"
	"github.com/quarrydb/quarry/internal/eecar/store"
	"github.com/quarrydb/quarry/internal/platform/fetch"
	"github.com/quarrydb/quarry/internal/platform/jsonhttp"
)

// Handler serves the API.
type Handler struct {
	m            *market.Market
	st           *store.Store
	log          *slog.Logger
	mux          *http.ServeMux
	checkWebhook func(ctx context.Context, url string) error
}

// Option configures a Handler.
type Option func(*Handler)

// WithWebhookCheck makes PUT /me/webhook refuse (400, with the reason) a
// URL that check refuses; give it the shared network policy's
// fetch.Fetcher.Validate, so that a webhook the deliverer could never
// reach is refused when it is set, not dropped at every delivery.
func WithWebhookCheck(check func(ctx context.Context, url string) error) Option {
	return func(h *Handler) { h.checkWebhook = check }
}

// New returns the API over a market.
func New(m *market.Market, logger *slog.Logger, opts ...Option) *Handler {
	if logger == nil {
		logger = slog.Default()
	}
	h := &Handler{m: m, st: m.Store(), log: logger, mux: http.NewServeMux()}
	for _, o := range opts {
		o(h)
	}
	h.mux.HandleFunc("GET /me", h.me)
	h.mux.HandleFunc("GET /me/webhook", h.getWebhook)
	h.mux.HandleFunc("PUT /me/webhook", h.setWebhook)
	h.mux.HandleFunc("POST /parts", h.createPart)
	h.mux.HandleFunc("GET /parts", h.listParts)
	h.mux.HandleFunc("GET /parts/{id}", h.getPart)
	h.mux.HandleFunc("PUT /parts/{id}", h.updatePart)
	h.mux.HandleFunc("DELETE /parts/{id}", h.deletePart)
	h.mux.HandleFunc("POST /search", h.search)
	h.mux.HandleFunc("POST /needs", h.createNeed)
	h.mux.HandleFunc("GET /needs", h.listNeeds)
	h.mux.HandleFunc("GET /needs/{id}", h.getNeed)
	h.mux.HandleFunc("PUT /needs/{id}", h.updateNeed)
	h.mux.HandleFunc("DELETE /needs/{id}", h.deleteNeed)
	h.mux.HandleFunc("GET /needs/{id}/matches", h.needMatches)
	h.mux.HandleFunc("POST /watch", h.createWatch)
	h.mux.HandleFunc("POST /watches", h.createWatch)
	h.mux.HandleFunc("GET /watches", h.listWatches)
	h.mux.HandleFunc("GET /watches/{id}", h.getWatch)
	h.mux.HandleFunc("DELETE /watches/{id}", h.cancelWatch)
	h.mux.HandleFunc("GET /watches/{id}/triggers", h.watchTriggers)
	h.mux.HandleFunc("POST /proposals", h.createProposal)
	h.mux.HandleFunc("GET /proposals", h.listProposals)
	h.mux.HandleFunc("GET /proposals/{id}", h.getProposal)
	h.mux.HandleFunc("POST /proposals/{id}/respond", h.respond)
	h.mux.HandleFunc("GET /notifications", h.notifications)
	h.mux.HandleFunc("POST /notifications/{id}/read", h.markRead)
	h.mux.HandleFunc("POST /battery-health", h.batteryHealth)
	h.mux.HandleFunc("POST /images", h.uploadImage)
	h.mux.HandleFunc("GET /images/{key}", h.image)
	h.mux.HandleFunc("DELETE /images/{key}", h.deleteImage)
	h.mux.HandleFunc("GET /images", h.imageUsage)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		jsonhttp.Error(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path)
	})
	return h
}

type companyKey struct{}

// ServeHTTP authenticates the API key and dispatches. The caller mounts it
// with http.StripPrefix("/eecar", h); "/api/..." paths (the original's)
// are accepted too.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		key = r.Header.Get("X-API-Key")
	}
	c, err := h.st.Authenticate(r.Context(), strings.TrimSpace(key))
	if errors.Is(err, store.ErrUnauthorized) {
		jsonhttp.Error(w, http.StatusUnauthorized, "missing or invalid API key")
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if p, ok := strings.CutPrefix(r.URL.Path, "/api"); ok && strings.HasPrefix(p, "/") {
		r.URL.Path = p
	}
	h.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), companyKey{}, c)))
}

func company(r *http.Request) store.Company {
	c, _ := r.Context().Value(companyKey{}).(store.Company)
	return c
}

func (h *Handler) me(w http.ResponseWriter, r *http.Request) {
	jsonhttp.Write(w, http.StatusOK, company(r))
}

// webhookStatus is GET /me/webhook: the webhook and how delivery to it
// went.
type webhookStatus struct {
	WebhookURL          string `json:"webhookUrl"`
	LastDeliveredAt     string `json:"lastDeliveredAt,omitempty"`
	LastDeliveryError   string `json:"lastDeliveryError,omitempty"`
	LastDeliveryErrorAt string `json:"lastDeliveryErrorAt,omitempty"`
}

func (h *Handler) getWebhook(w http.ResponseWriter, r *http.Request) {
	c := company(r)
	jsonhttp.Write(w, http.StatusOK, webhookStatus{WebhookURL: c.WebhookURL, LastDeliveredAt: c.LastDeliveredAt,
		LastDeliveryError: c.LastDeliveryError, LastDeliveryErrorAt: c.LastDeliveryErrorAt})
}

func (h *Handler) setWebhook(w http.ResponseWriter, r *http.Request) {
	var in struct {
		WebhookURL string `json:"webhookUrl"`
	}
	if !jsonhttp.Decode(w, r, &in, 1<<20, false) {
		return
	}
	in.WebhookURL = strings.TrimSpace(in.WebhookURL)
	if in.WebhookURL != "" {
		u, err := url.Parse(in.WebhookURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			jsonhttp.Error(w, http.StatusBadRequest, "webhookUrl must be an http(s) URL")
			return
		}
		if h.checkWebhook != nil {
			if err := h.checkWebhook(r.Context(), in.WebhookURL); err != nil {
				msg := "webhookUrl refused by the network policy: " + err.Error()
				if !strings.Contains(msg, fetch.PolicyFlag) {
					msg += " (outbound addresses are governed by " + fetch.PolicyFlag + ")"
				}
				jsonhttp.Error(w, http.StatusBadRequest, msg)
				return
			}
		}
	}
	c, err := h.st.SetWebhook(r.Context(), company(r).ID, in.WebhookURL)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, c)
}

func (h *Handler) createPart(w http.ResponseWriter, r *http.Request) {
	var in market.PartInput
	if !jsonhttp.Decode(w, r, &in, 1<<20, false) {
		return
	}
	p, err := h.m.RegisterPart(r.Context(), company(r).ID, in)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusCreated, p)
}

func (h *Handler) listParts(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cat := q.Get("category")
	if !store.ValidCategory(cat) {
		jsonhttp.Error(w, http.StatusBadRequest, "category is required: one of "+strings.Join(store.Categories(), ", "))
		return
	}
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			jsonhttp.Error(w, http.StatusBadRequest, "limit must be 1 to 100")
			return
		}
		limit = n
	}
	parts, next, err := h.st.ListByCategory(r.Context(), cat, limit, q.Get("cursor"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := map[string]any{"parts": parts}
	if next != "" {
		out["nextCursor"] = next
	}
	jsonhttp.Write(w, http.StatusOK, out)
}

func (h *Handler) getPart(w http.ResponseWriter, r *http.Request) {
	p, err := h.st.GetPart(r.Context(), r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, p)
}

func (h *Handler) updatePart(w http.ResponseWriter, r *http.Request) {
	var in market.PartInput
	if !jsonhttp.Decode(w, r, &in, 1<<20, false) {
		return
	}
	p, err := h.m.UpdatePart(r.Context(), company(r).ID, r.PathValue("id"), in)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, p)
}

func (h *Handler) deletePart(w http.ResponseWriter, r *http.Request) {
	if err := h.m.DeletePart(r.Context(), company(r).ID, r.PathValue("id")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) search(w http.ResponseWriter, r *http.Request) {
	var in market.SearchRequest
	if !jsonhttp.Decode(w, r, &in, 1<<20, false) {
		return
	}
	out, err := h.m.Search(r.Context(), in)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, out)
}

func (h *Handler) createNeed(w http.ResponseWriter, r *http.Request) {
	var in market.NeedInput
	if !jsonhttp.Decode(w, r, &in, 1<<20, false) {
		return
	}
	n, err := h.m.SaveNeed(r.Context(), company(r), "", in)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusCreated, n)
}

func (h *Handler) listNeeds(w http.ResponseWriter, r *http.Request) {
	ns, err := h.st.ListNeeds(r.Context(), company(r).ID, r.URL.Query().Get("status"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, ns)
}

func (h *Handler) getNeed(w http.ResponseWriter, r *http.Request) {
	n, err := h.st.GetNeed(r.Context(), company(r).ID, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, n)
}

func (h *Handler) updateNeed(w http.ResponseWriter, r *http.Request) {
	c := company(r)
	if _, err := h.st.GetNeed(r.Context(), c.ID, r.PathValue("id")); err != nil {
		h.fail(w, r, err)
		return
	}
	var in market.NeedInput
	if !jsonhttp.Decode(w, r, &in, 1<<20, false) {
		return
	}
	n, err := h.m.SaveNeed(r.Context(), c, r.PathValue("id"), in)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, n)
}

func (h *Handler) deleteNeed(w http.ResponseWriter, r *http.Request) {
	if err := h.st.DeleteNeed(r.Context(), company(r).ID, r.PathValue("id")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) needMatches(w http.ResponseWriter, r *http.Request) {
	n, err := h.st.GetNeed(r.Context(), company(r).ID, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	topK, _ := strconv.Atoi(r.URL.Query().Get("topK"))
	out, err := h.m.NeedMatches(r.Context(), n, topK)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, out)
}

func (h *Handler) createWatch(w http.ResponseWriter, r *http.Request) {
	var in store.Watch
	if !jsonhttp.Decode(w, r, &in, 1<<20, false) {
		return
	}
	c := company(r)
	if in.BuyerID != "" && in.BuyerID != c.ID {
		jsonhttp.Error(w, http.StatusForbidden, "buyerId must be your own company id")
		return
	}
	wt, err := h.m.CreateWatch(r.Context(), c.ID, in)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusCreated, wt)
}

func (h *Handler) listWatches(w http.ResponseWriter, r *http.Request) {
	ws, err := h.st.ListWatches(r.Context(), company(r).ID, r.URL.Query().Get("status"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, ws)
}

func (h *Handler) getWatch(w http.ResponseWriter, r *http.Request) {
	wt, err := h.st.GetWatch(r.Context(), company(r).ID, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, wt)
}

func (h *Handler) cancelWatch(w http.ResponseWriter, r *http.Request) {
	wt, err := h.m.CancelWatch(r.Context(), company(r).ID, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, wt)
}

func (h *Handler) watchTriggers(w http.ResponseWriter, r *http.Request) {
	wt, err := h.st.GetWatch(r.Context(), company(r).ID, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ts, err := h.st.Triggers(r.Context(), wt.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, ts)
}

func (h *Handler) createProposal(w http.ResponseWriter, r *http.Request) {
	var in store.Proposal
	if !jsonhttp.Decode(w, r, &in, 1<<20, false) {
		return
	}
	p, err := h.m.Propose(r.Context(), company(r).ID, in)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusCreated, p)
}

func (h *Handler) listProposals(w http.ResponseWriter, r *http.Request) {
	c := company(r)
	q := r.URL.Query()
	if id := q.Get("companyId"); id != "" && id != c.ID {
		jsonhttp.Error(w, http.StatusForbidden, "companyId must be your own company id")
		return
	}
	ps, err := h.st.ListProposals(r.Context(), c.ID, q.Get("status"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, ps)
}

func (h *Handler) getProposal(w http.ResponseWriter, r *http.Request) {
	p, err := h.st.GetProposal(r.Context(), company(r).ID, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, p)
}

func (h *Handler) respond(w http.ResponseWriter, r *http.Request) {
	var in store.Response
	if !jsonhttp.Decode(w, r, &in, 1<<20, false) {
		return
	}
	p, err := h.st.Respond(r.Context(), company(r).ID, r.PathValue("id"), in)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, p)
}

func (h *Handler) notifications(w http.ResponseWriter, r *http.Request) {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	ns, err := h.st.Notifications(r.Context(), company(r).ID, limit)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, ns)
}

func (h *Handler) markRead(w http.ResponseWriter, r *http.Request) {
	if err := h.st.MarkRead(r.Context(), company(r).ID, r.PathValue("id")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) batteryHealth(w http.ResponseWriter, r *http.Request) {
	var in market.BatteryRequest
	if !jsonhttp.Decode(w, r, &in, 1<<20, false) {
		return
	}
	out, err := h.m.BatteryHealth(r.Context(), in)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, out)
}

// uploadImage stores the request body as a part image: 201 with its key and
// the URL a part lists in images.
func (h *Handler) uploadImage(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, market.MaxImageSize))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		jsonhttp.Error(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("an image may be at most %d MB", market.MaxImageSize>>20))
		return
	}
	if err != nil {
		jsonhttp.Error(w, http.StatusBadRequest, "could not read the image: "+err.Error())
		return
	}
	key, err := h.m.PutImage(r.Context(), company(r).ID, data)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusCreated, map[string]string{"key": key, "url": market.ImagePath + key})
}

// deleteImage deletes an image the company uploaded: 204, or 404 when it
// has no such image.
func (h *Handler) deleteImage(w http.ResponseWriter, r *http.Request) {
	if err := h.m.DeleteImage(r.Context(), company(r).ID, r.PathValue("key")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// imageUsage answers what the company's uploaded images take and its quota.
func (h *Handler) imageUsage(w http.ResponseWriter, r *http.Request) {
	u, err := h.m.ImageUsage(r.Context(), company(r).ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, u)
}

func (h *Handler) image(w http.ResponseWriter, r *http.Request) {
	rc, ctype, err := h.m.Image(r.Context(), r.PathValue("key"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "private, max-age=86400, immutable")
	_, _ = io.Copy(w, rc)
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		jsonhttp.Error(w, http.StatusNotFound, err.Error())
	case errors.Is(err, store.ErrInvalid):
		jsonhttp.Error(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, store.ErrForbidden), errors.Is(err, store.ErrQuota):
		jsonhttp.Error(w, http.StatusForbidden, err.Error())
	case errors.Is(err, store.ErrState), errors.Is(err, store.ErrExists):
		jsonhttp.Error(w, http.StatusConflict, err.Error())
	default:
		h.log.ErrorContext(r.Context(), "eecar: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		jsonhttp.Error(w, http.StatusInternalServerError, "internal error")
	}
}
