package config

import "errors"

// EECAR is the configuration of the EV-parts marketplace.
type EECAR struct {
	// TablePrefix prefixes eecar-parts-table.
	TablePrefix string
	// EmbeddingsURL, when set, is an OpenAI-compatible base URL whose
	// /v1/embeddings makes EECAR's vectors (with EmbeddingsModel,
	// EmbeddingsDim and EmbeddingsKey); empty: the local embedder.
	EmbeddingsURL, EmbeddingsModel, EmbeddingsKey string
	EmbeddingsDim                                 int
	// ImageQuota bounds the bytes of the part images one company uploads
	// (0: no bound).
	ImageQuota int64
}

func eecarDefaults() EECAR {
	return EECAR{ImageQuota: 1 << 30}
}

func (e *EECAR) fields() []field {
	return group(GroupEECAR, []field{
		{flag: "eecar-table-prefix", usage: "prefix of eecar-parts-table", str: &e.TablePrefix},
		{flag: "eecar-embeddings-url", usage: "OpenAI-compatible base URL for EECAR's embeddings (default: the local embedder)", str: &e.EmbeddingsURL},
		{flag: "eecar-embeddings-model", usage: "embedding model name at eecar-embeddings-url", str: &e.EmbeddingsModel},
		{flag: "eecar-embeddings-key", usage: "API key for eecar-embeddings-url", str: &e.EmbeddingsKey},
		{flag: "eecar-embeddings-dim", usage: "dimension of the embeddings at eecar-embeddings-url", num: &e.EmbeddingsDim},
		{flag: "eecar-image-quota", usage: "most bytes of part images one company may upload (bytes, or a size like 512MiB, 1GiB; 0: no bound)", size: &e.ImageQuota},
	})
}

func (e *EECAR) validate() []error {
	if e.EmbeddingsURL != "" && (e.EmbeddingsModel == "" || e.EmbeddingsDim <= 0) {
		return []error{errors.New("config: --eecar-embeddings-url needs --eecar-embeddings-model and a positive --eecar-embeddings-dim")}
	}
	return nil
}
