package eecar

import (
	"strings"
	"testing"
	"time"
)

func TestKRW(t *testing.T) {
	for _, tc := range []struct {
		v      float64
		en, ko string
	}{
		{12_500_000, "₩12,500,000", "₩12,500,000 (1,250만 원)"},
		{8_500_000, "₩8,500,000", "₩8,500,000 (850만 원)"},
		{125_000_000, "₩125,000,000", "₩125,000,000 (1억 2,500만 원)"},
		{1_200_000_000, "₩1,200,000,000", "₩1,200,000,000 (12억 원)"},
		{10_005_000, "₩10,005,000", "₩10,005,000 (1,000만 5,000 원)"},
		{9_500, "₩9,500", "₩9,500"},
		{0, "₩0", "₩0"},
	} {
		if got := Lang("en").KRW(tc.v); got != tc.en {
			t.Errorf("en KRW(%v) = %q, want %q", tc.v, got, tc.en)
		}
		if got := Lang("ko").KRW(tc.v); got != tc.ko {
			t.Errorf("ko KRW(%v) = %q, want %q", tc.v, got, tc.ko)
		}
	}
}

func TestAcceptLang(t *testing.T) {
	for h, want := range map[string]Lang{
		"":                           "en",
		"ko-KR,ko;q=0.9,en-US;q=0.8": "ko",
		"en-US,en;q=0.9,ko;q=0.8":    "en",
		"fr-FR,ko;q=0.5,en;q=0.4":    "ko",
		"ja":                         "en",
		"en;q=0.2, ko-KR;q=0.7":      "ko",
		"ko;q=garbage, en;q=0.5":     "ko",
	} {
		if got := acceptLang(h); got != want {
			t.Errorf("acceptLang(%q) = %s, want %s", h, got, want)
		}
	}
}

// TestTextsComplete checks every text has both languages.
func TestTextsComplete(t *testing.T) {
	for k, v := range texts {
		if strings.TrimSpace(v[0]) == "" || strings.TrimSpace(v[1]) == "" {
			t.Errorf("text %q lacks a language: %q", k, v)
		}
	}
	if got := Lang("ko").T("nav.search"); got != "부품 검색" {
		t.Errorf("ko nav.search = %q", got)
	}
}

// TestAgo: EECAR's times are relative in the page's language, with the
// absolute UTC time on hover.
func TestAgo(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		at     string
		en, ko string
	}{
		{"2026-03-10T11:59:50Z", "just now", "방금"},
		{"2026-03-10T11:55:00Z", "5 min ago", "5분 전"},
		{"2026-03-10T09:00:00Z", "3 h ago", "3시간 전"},
		{"2026-03-09T06:00:00Z", "1 day ago", "1일 전"},
		{"2026-03-10T12:04:00Z", "in 4 min", "4분 후"},
	} {
		if got := string(Lang("en").Ago(tc.at, now)); !strings.Contains(got, ">"+tc.en+"</time>") {
			t.Errorf("en Ago(%s) = %s", tc.at, got)
		}
		if got := string(Lang("ko").Ago(tc.at, now)); !strings.Contains(got, ">"+tc.ko+"</time>") {
			t.Errorf("ko Ago(%s) = %s", tc.at, got)
		}
	}
	if got := string(Lang("en").Ago("2026-03-10T11:55:00Z", now)); got != `<time datetime="2026-03-10T11:55:00Z" title="10 Mar 2026 11:55 UTC">5 min ago</time>` {
		t.Errorf("en Ago = %s", got)
	}
	if got := string(Lang("en").Ago("2025-12-24T08:00:00Z", now)); got != "24 Dec 2025 08:00 UTC" {
		t.Errorf("an old time = %s", got)
	}
}
