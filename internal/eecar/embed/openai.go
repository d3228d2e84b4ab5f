package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// DefaultOpenAIDimension is the dimension NewOpenAI assumes when given
// dim <= 0 (the original system used 1024-dimensional embeddings).
const DefaultOpenAIDimension = 1024

// maxResponseBytes caps the body read from the embeddings endpoint.
const maxResponseBytes = 64 << 20

// OpenAI calls an OpenAI-compatible embeddings endpoint:
// POST {baseURL}/v1/embeddings {"model":..., "input":[...]} with
// Authorization: Bearer apiKey. It parses data[].embedding (sorted by
// index), L2-normalises each vector and checks its dimension. It is safe
// for concurrent use.
type OpenAI struct {
	baseURL string
	apiKey  string
	model   string
	dim     int
	client  *http.Client
}

// NewOpenAI returns an OpenAI-compatible embedder. baseURL is the server
// root without "/v1" (a trailing slash is ignored); dim <= 0 → 1024; a
// nil client means an http.Client with a 60 s timeout.
func NewOpenAI(baseURL, apiKey, model string, dim int, client *http.Client) *OpenAI {
	if dim <= 0 {
		dim = DefaultOpenAIDimension
	}
	if client == nil {
		client = &http.Client{Timeout: 60 * time.Second}
	}
	return &OpenAI{
		baseURL: strings.TrimRight(baseURL, "/"),
		apiKey:  apiKey,
		model:   model,
		dim:     dim,
		client:  client,
	}
}

// Model returns the provider's model name.
func (o *OpenAI) Model() string { return o.model }

// Dimension returns the expected vector length.
func (o *OpenAI) Dimension() int { return o.dim }

type embeddingsRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type embeddingsResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

// Embed sends all texts in one request and returns their vectors in
// input order. No request is made for an empty slice.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return [][]float32{}, nil
	}
	body, err := json.Marshal(embeddingsRequest{Model: o.model, Input: texts})
	if err != nil {
		return nil, fmt.Errorf("openai embed: encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.baseURL+"/v1/embeddings", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("openai embed: build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if o.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.apiKey)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("openai embed: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, fmt.Errorf("openai embed: read response (HTTP %d): %w", resp.StatusCode, err)
	}
	var parsed embeddingsResponse
	decodeErr := json.Unmarshal(raw, &parsed)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := ""
		if decodeErr == nil && parsed.Error != nil {
			msg = parsed.Error.Message
		} else {
			msg = strings.TrimSpace(string(raw))
			if len(msg) > 200 {
				msg = msg[:200] + "…"
			}
		}
		return nil, fmt.Errorf("openai embed: %w", &APIError{Status: resp.StatusCode, Message: msg})
	}
	if decodeErr != nil {
		return nil, fmt.Errorf("openai embed: decode response: %w", decodeErr)
	}
	if parsed.Error != nil {
		return nil, fmt.Errorf("openai embed: %w", &APIError{Status: resp.StatusCode, Message: parsed.Error.Message})
	}
	if len(parsed.Data) != len(texts) {
		return nil, fmt.Errorf("openai embed: got %d embeddings for %d inputs: %w", len(parsed.Data), len(texts), ErrBadResponse)
	}
	out := make([][]float32, len(texts))
	for _, d := range parsed.Data {
		if d.Index < 0 || d.Index >= len(texts) || out[d.Index] != nil {
			return nil, fmt.Errorf("openai embed: bad or duplicate index %d: %w", d.Index, ErrBadResponse)
		}
		if len(d.Embedding) != o.dim {
			return nil, fmt.Errorf("openai embed: embedding %d has dimension %d, want %d: %w", d.Index, len(d.Embedding), o.dim, ErrDimension)
		}
		Normalize(d.Embedding)
		out[d.Index] = d.Embedding
	}
	return out, nil
}

// ErrDimension reports an embedding whose length differs from the
// configured dimension.
var ErrDimension = errors.New("embedding dimension mismatch")

// ErrBadResponse reports a structurally invalid embeddings response.
var ErrBadResponse = errors.New("malformed embeddings response")

// APIError is an error returned by the embeddings provider.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Message is the provider's error.message (or a prefix of the body).
	Message string
}

// Error implements error.
func (e *APIError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("provider returned HTTP %d", e.Status)
	}
	return fmt.Sprintf("provider returned HTTP %d: %s", e.Status, e.Message)
}
