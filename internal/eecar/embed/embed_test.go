package embed

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func TestTokenize(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"english lower-cased", "Tesla Model-3 Battery", []string{"tesla", "model", "3", "battery"}},
		{"units split", "800V inverter 75kWh", []string{"800v", "800", "v", "inverter", "75kwh", "75", "kwh"}},
		{"decimal unit", "3.5kW charger.", []string{"3.5kw", "3.5", "kw", "charger"}},
		{"thousands separator", "1,000 cells", []string{"1000", "cells"}},
		{"alnum is not a unit", "NCM811 cathode", []string{"ncm811", "cathode"}},
		{"particles", "배터리를 모터의 인버터에서 문은 셀이 팩으로", []string{"배터리", "모터", "인버터", "문", "셀", "팩"}},
		{"single syllable kept", "이 도 문", []string{"이", "도", "문"}},
		{"protected endings", "강도 길이 회로 유리", []string{"강도", "길이", "회로", "유리"}},
		{"mixed scripts", "Tesla배터리 800V급", []string{"tesla", "배터리", "800v", "800", "v", "급"}},
		{"punctuation and empty", " --- , . ", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Tokenize(tt.in)
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Tokenize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	l := NewLocal(0)
	tests := []struct{ in, want string }{
		{"배터리", "battery"},
		{"batteries", "battery"},
		{"문", "door"},
		{"에너지저장", "ess"},
		{"ess", "ess"},
		{"테슬라", "tesla"},
		{"flux-capacitor", "flux-capacitor"},
	}
	for _, tt := range tests {
		if got := l.Canonical(tt.in); got != tt.want {
			t.Errorf("Canonical(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got, want := l.Tokens("현대 도어를"), []string{"hyundai", "door"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Tokens = %q, want %q", got, want)
	}
}

func TestLocalModelAndDimension(t *testing.T) {
	tests := []struct {
		dim       int
		wantDim   int
		wantModel string
	}{
		{0, 256, "quarry-local-hash-v3-256"},
		{-3, 256, "quarry-local-hash-v3-256"},
		{64, 64, "quarry-local-hash-v3-64"},
	}
	for _, tt := range tests {
		l := NewLocal(tt.dim)
		if l.Dimension() != tt.wantDim || l.Model() != tt.wantModel {
			t.Errorf("NewLocal(%d): dim %d model %q", tt.dim, l.Dimension(), l.Model())
		}
		vs, err := l.Embed(context.Background(), []string{"battery"})
		if err != nil || len(vs[0]) != tt.wantDim {
			t.Errorf("NewLocal(%d).Embed: len %d err %v", tt.dim, len(vs[0]), err)
		}
	}
}

func TestLocalDeterministicAndGolden(t *testing.T) {
	const text = "Hyundai Ioniq 5 battery pack, 800V NCM811 72.6kWh, SOH 92%, 450 cycles; 현대 아이오닉 중고 배터리 팩을 ESS와 지게차에 재사용"
	ctx := context.Background()
	a, err := NewLocal(256).Embed(ctx, []string{text})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewLocal(256).Embed(ctx, []string{text})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same text embedded twice gave different vectors")
	}
	// The first four components, then the first four non-zero ones.
	golden := map[int]float32{
		0: 0, 1: 0, 2: 0, 3: 0.062208623,
		11: -0.1469656, 16: 0.0367414, 17: 0.062208623, 18: -0.0367414,
	}
	for i, want := range golden {
		if got := a[0][i]; math.Abs(float64(got-want)) > 1e-6 {
			t.Errorf("component %d = %v, want %v (golden)", i, got, want)
		}
	}
}

func TestLocalNormalised(t *testing.T) {
	texts := []string{"", "battery", "테슬라 배터리 모듈", "800V SiC inverter from a Hyundai Ioniq 5", "...", strings.Repeat("door ", 500)}
	vs, err := NewLocal(128).Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		n := norm(v)
		wantZero := texts[i] == "" || texts[i] == "..."
		switch {
		case wantZero && n != 0:
			t.Errorf("%q: norm %v, want 0", texts[i], n)
		case !wantZero && math.Abs(n-1) > 1e-5:
			t.Errorf("%q: norm %v, want 1", texts[i], n)
		}
	}
}

func TestLocalSimilarity(t *testing.T) {
	tests := []struct {
		name             string
		query, near, far string
	}{
		{"korean meets english", "테슬라 배터리 모듈", "Tesla Model 3 battery module NCA", "Hyundai front door panel"},
		{"english paraphrase", "used battery module from a Tesla", "Tesla Model 3 battery module NCA", "Kia EV6 rear window glass"},
		{"korean door", "현대 도어 패널", "Hyundai front door panel", "Tesla Model 3 battery module NCA"},
		{"inverter", "800V inverter", "Hyundai 800V SiC inverter for E-GMP", "Kia seat interior trim"},
		{"forklift use case", "지게차용 배터리", "LFP battery pack suitable for forklift and AGV", "aluminum hood panel"},
	}
	l := NewLocal(0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs, err := l.Embed(context.Background(), []string{tt.query, tt.near, tt.far})
			if err != nil {
				t.Fatal(err)
			}
			near, far := Cosine(vs[0], vs[1]), Cosine(vs[0], vs[2])
			if near <= far {
				t.Errorf("cos(query, near) = %.3f <= cos(query, far) = %.3f", near, far)
			}
		})
	}
}

func TestLocalContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewLocal(0).Embed(ctx, []string{"x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		in, want []float32
	}{
		{[]float32{3, 4}, []float32{0.6, 0.8}},
		{[]float32{0, 0, 0}, []float32{0, 0, 0}},
		{[]float32{-2}, []float32{-1}},
		{nil, nil},
	}
	for _, tt := range tests {
		v := append([]float32(nil), tt.in...)
		Normalize(v)
		for i := range v {
			if math.Abs(float64(v[i]-tt.want[i])) > 1e-6 {
				t.Errorf("Normalize(%v) = %v, want %v", tt.in, v, tt.want)
				break
			}
		}
	}
}

// fakeProvider serves /v1/embeddings with handler-controlled output.
func fakeProvider(t *testing.T, status int, respond func(req embeddingsRequest) any) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
			http.Error(w, "bad route "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		if r.Header.Get("Authorization") != "Bearer sk-test" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}`))
			return
		}
		var req embeddingsRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(respond(req))
	}))
	t.Cleanup(srv.Close)
	return srv
}

type item struct {
	Index     int       `json:"index"`
	Embedding []float32 `json:"embedding"`
}

func TestOpenAI(t *testing.T) {
	ok := func(order []int, dim int) func(embeddingsRequest) any {
		return func(req embeddingsRequest) any {
			var data []item
			for _, i := range order {
				v := make([]float32, dim)
				v[i%dim] = float32(2 * (i + 1)) // not normalised on purpose
				data = append(data, item{Index: i, Embedding: v})
			}
			return map[string]any{"object": "list", "model": req.Model, "data": data}
		}
	}
	tests := []struct {
		name    string
		key     string
		status  int
		respond func(embeddingsRequest) any
		wantErr string
		isErr   error
	}{
		{name: "success", key: "sk-test", status: 200, respond: ok([]int{0, 1, 2}, 4)},
		{name: "reordered indexes", key: "sk-test", status: 200, respond: ok([]int{2, 0, 1}, 4)},
		{name: "unauthorized", key: "wrong", status: 200, respond: ok([]int{0, 1, 2}, 4), wantErr: "openai embed: provider returned HTTP 401: Incorrect API key provided"},
		{name: "wrong dimension", key: "sk-test", status: 200, respond: ok([]int{0, 1, 2}, 3), wantErr: "dimension 3, want 4", isErr: ErrDimension},
		{name: "missing item", key: "sk-test", status: 200, respond: ok([]int{0, 1}, 4), wantErr: "got 2 embeddings for 3 inputs", isErr: ErrBadResponse},
		{name: "duplicate index", key: "sk-test", status: 200, respond: ok([]int{0, 0, 1}, 4), isErr: ErrBadResponse},
		{name: "server error", key: "sk-test", status: 500, respond: func(embeddingsRequest) any {
			return map[string]any{"error": map[string]any{"message": "overloaded"}}
		}, wantErr: "provider returned HTTP 500: overloaded"},
	}
	texts := []string{"a", "b", "c"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakeProvider(t, tt.status, tt.respond)
			o := NewOpenAI(srv.URL+"/", tt.key, "text-embedding-3-small", 4, srv.Client())
			if o.Model() != "text-embedding-3-small" || o.Dimension() != 4 {
				t.Fatalf("Model/Dimension = %q/%d", o.Model(), o.Dimension())
			}
			vs, err := o.Embed(context.Background(), texts)
			if tt.wantErr != "" || tt.isErr != nil {
				if err == nil {
					t.Fatalf("err = nil, want %q", tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %q, want it to contain %q", err, tt.wantErr)
				}
				if tt.isErr != nil && !errors.Is(err, tt.isErr) {
					t.Errorf("err = %v, want errors.Is %v", err, tt.isErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range vs {
				if len(v) != 4 || v[i] != 1 || math.Abs(norm(v)-1) > 1e-6 {
					t.Errorf("vector %d = %v, want unit vector on axis %d", i, v, i)
				}
			}
		})
	}
}

func TestOpenAIEmptyInputAndAPIError(t *testing.T) {
	o := NewOpenAI("http://127.0.0.1:1", "k", "m", 0, nil)
	if o.Dimension() != DefaultOpenAIDimension {
		t.Errorf("default dim = %d", o.Dimension())
	}
	vs, err := o.Embed(context.Background(), nil)
	if err != nil || len(vs) != 0 {
		t.Errorf("Embed(nil) = %v, %v; want empty, nil", vs, err)
	}
	srv := fakeProvider(t, 200, func(embeddingsRequest) any { return nil })
	_, err = NewOpenAI(srv.URL, "bad", "m", 4, nil).Embed(context.Background(), []string{"x"})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnauthorized {
		t.Errorf("err = %v, want *APIError with status 401", err)
	}
}

var _ Embedder = (*Local)(nil)
var _ Embedder = (*OpenAI)(nil)

// TestGlossaryFile: the embedded glossary parses, no word or phrase is in
// two families, and every family has an English and a Korean variant.
func TestGlossaryFile(t *testing.T) {
	fams := Glossary()
	if len(fams) < 100 {
		t.Fatalf("%d glossary families, want at least 100", len(fams))
	}
	if _, err := compileGlossary(fams); err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		var ko, en bool
		for _, v := range f.Variants {
			if strings.IndexFunc(v, isHangul) >= 0 {
				ko = true
			} else {
				en = true
			}
		}
		if !ko || !en {
			t.Errorf("family %s %q: want an English and a Korean variant", f.Canonical, f.Variants)
		}
	}
	if _, err := compileGlossary([]Family{{"a", []string{"heat pump"}}, {"b", []string{"Heat  pump"}}}); err == nil {
		t.Error("a phrase in two families was accepted")
	}
}

func TestGlossaryPhrases(t *testing.T) {
	l := NewLocal(0)
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"heat pump", []string{"heatpump", "heat", "pump"}},
		{"히트펌프", []string{"heatpump"}},
		{"히트 펌프를", []string{"heatpump", "히트", "pump"}},
		{"11kW on-board charger", []string{"11kw", "11", "kw", "obc", "on", "board", "charger"}},
		{"온보드 충전기 11kW", []string{"obc", "온보드", "charger", "11kw", "11", "kw"}},
		{"DC-DC 컨버터", []string{"ldc", "dc", "dc", "converter"}},
		{"고전압 정션박스", []string{"junction-box", "high-voltage", "junction-box"}},
		{"heat", []string{"heat"}},
	} {
		if got := l.Tokens(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Tokens(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
