// Package embed turns part descriptions and search queries into
// L2-normalised vectors for EECAR's semantic search.
//
// Two providers are offered: Local, a deterministic hashed-feature
// embedder that needs no model download and understands a small
// Korean/English glossary of EV-part terms, and OpenAI, a client for any
// OpenAI-compatible /v1/embeddings endpoint. Tokenize is shared with the
// BM25 index so that keyword and vector search see the same words.
package embed

import (
	"context"
	"math"
)

// Embedder turns texts into L2-normalised vectors.
type Embedder interface {
	// Embed returns one vector of length Dimension() per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Model names the model; it is recorded as embeddingModel in the
	// VECTOR item.
	Model() string
	// Dimension is the length of every vector Embed returns.
	Dimension() int
}

// Normalize L2-normalises v in place (zero vector stays zero).
func Normalize(v []float32) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
}

// Cosine returns the dot product of a and b, which is their cosine
// similarity when both are L2-normalised. Vectors of different lengths
// score 0.
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}
