package main

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserTab drives one browser (its own cookies) of the EECAR console
// test: the console tests' driver, with the EECAR area's helpers below.
type browserTab = driver

// unread is the header's unread count.
func (b *browserTab) unread() string {
	b.t.Helper()
	return strings.TrimSpace(b.text("#nav-unread"))
}

// openNote opens the newest notification of a type and follows its link.
func (b *browserTab) openNote(typ string) {
	b.t.Helper()
	b.run("notifications "+typ, chromedp.Navigate(b.base+"/console/eecar/notifications/"),
		chromedp.WaitVisible(chromedp.CSS(`#notes li.unread[data-type="`+typ+`"] a`)),
		submitAndWait(`#notes li.unread[data-type="`+typ+`"] a`),
		chromedp.WaitVisible(chromedp.CSS("#note-link")),
		submitAndWait("#note-link"),
		chromedp.WaitVisible(chromedp.CSS("#p-status")))
}

// TestConsoleEECAR negotiates a proposal between two companies in two
// browser contexts against `quarry serve`: the seller lists a part (the
// API's message for a bad form first, then with an image), the buyer finds
// it with a Korean query and its match reasons, proposes; the seller,
// notified, counters; the buyer, notified, accepts; the seller is notified
// of it. Another company's URLs are 404, and forms without their CSRF
// token are refused.
func TestConsoleEECAR(t *testing.T) {
	dir := t.TempDir()
	s := startEECARServe(t, dir)
	base := "http://" + s.api
	newCompany := func(name string) string {
		t.Helper()
		code, key, errs := s.cli(dir, "company", "create", "--name", name)
		if code != 0 || !strings.HasPrefix(key, "ek_") {
			t.Fatalf("company create %s: %d %q %s", name, code, key, errs)
		}
		return key
	}
	sellerKey, buyerKey, otherKey := newCompany("Seoul EV Recycling"), newCompany("Busan ESS"), newCompany("Third Motors")

	shots := t.TempDir()
	if os.Getenv("QUARRY_CONSOLE_SCREENSHOTS") != "" {
		shots = filepath.Join("..", "..", "docs", "img")
	}
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name), png, 0o644)
		})
	}

	// Two browsers: each company has its own cookies.
	sctx, bctx := consoleBrowser(t), consoleBrowser(t)
	seller := &browserTab{t: t, ctx: sctx, base: base, shots: t.TempDir()}
	buyer := &browserTab{t: t, ctx: bctx, base: base, shots: t.TempDir()}
	seller.signIn("eecar", sellerKey)
	buyer.signIn("eecar", buyerKey)

	// The buyer watches for batteries of at least 80 % SOH.
	buyer.run("watch", chromedp.Navigate(base+"/console/eecar/watches/"), chromedp.WaitVisible(chromedp.CSS("#watch-form")),
		chromedp.SetValue(chromedp.CSS("#category"), "battery"),
		chromedp.SendKeys(chromedp.CSS("#minSoh"), "80"),
		chromedp.SendKeys(chromedp.CSS("#maxPrice"), "9,000,000"),
		submitAndWait("#watch-form button"), chromedp.WaitVisible(chromedp.CSS("#triggers")))
	watchPath := buyer.eval(`location.pathname`)
	if got := buyer.text("#watch-criteria"); !strings.Contains(got, "chemicalProps.soh ≥ 80") || !strings.Contains(got, "₩9,000,000") {
		t.Errorf("watch criteria: %q", got)
	}

	// The seller lists a part: first without a manufacturer or a price,
	// which the API refuses with its own message, shown on the form.
	seller.run("bad part", chromedp.Navigate(base+"/console/eecar/my/new"), chromedp.WaitVisible(chromedp.CSS("#part-form")),
		chromedp.SendKeys(chromedp.CSS("#name"), "아이오닉 5 배터리 팩 72.6kWh"),
		chromedp.SetValue(chromedp.CSS("#category"), "battery"),
		submitAndWait("#save"), chromedp.WaitVisible(chromedp.CSS("#error")))
	if got := seller.text("#error"); !strings.Contains(got, "manufacturer is required") || !strings.Contains(got, "price is required") {
		t.Errorf("bad part: %q", got)
	}
	if got := seller.eval(`document.querySelector("#name").value`); got != "아이오닉 5 배터리 팩 72.6kWh" {
		t.Errorf("the form lost its name: %q", got)
	}
	img := filepath.Join(t.TempDir(), "pack.png")
	var buf bytes.Buffer
	m := image.NewRGBA(image.Rect(0, 0, 40, 24))
	for x := 0; x < 40; x++ {
		for y := 0; y < 24; y++ {
			m.Set(x, y, color.RGBA{30, 90, byte(6 * x), 255})
		}
	}
	if err := png.Encode(&buf, m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	seller.run("list part", chromedp.SendKeys(chromedp.CSS("#manufacturer"), "Hyundai"),
		chromedp.SendKeys(chromedp.CSS("#model"), "Ioniq 5"),
		chromedp.SendKeys(chromedp.CSS("#year"), "2022"),
		chromedp.SendKeys(chromedp.CSS("#price"), "8,500,000"),
		chromedp.SetValue(chromedp.CSS("#quantity"), "2"),
		chromedp.SendKeys(chromedp.CSS("#description"), "ESS 재사용에 적합한 NCM 배터리 팩"),
		chromedp.SendKeys(chromedp.CSS("#soh"), "92"),
		chromedp.SendKeys(chromedp.CSS("#cathode"), "NCM811"),
		chromedp.SendKeys(chromedp.CSS("#voltage"), "697"),
		chromedp.SetUploadFiles(chromedp.CSS("#upload"), []string{img}),
		submitAndWait("#save"), chromedp.WaitVisible(chromedp.CSS("#part-name")))
	partPath := seller.eval(`location.pathname`)
	if got := seller.text("#msg"); got != "Part listed." {
		t.Errorf("after listing: %q", got)
	}
	if got := seller.text("#part-price"); got != "₩8,500,000" {
		t.Errorf("price shown %q", got)
	}
	if got := seller.text("#health"); !strings.Contains(got, "92") || !strings.Contains(got, "NCM811") || !strings.Contains(got, "reuse") {
		t.Errorf("battery health: %q", got)
	}
	if got := seller.eval(`String(document.querySelector("#images img").naturalWidth)`); got != "40" {
		t.Errorf("the uploaded image shows %s px wide", got)
	}
	if got := seller.text("#specs"); !strings.Contains(got, "chemicalProps.soh") || !strings.Contains(got, "electricalProps.voltage") {
		t.Errorf("specs: %q", got)
	}
	partID := strings.TrimPrefix(partPath, "/console/eecar/parts/")

	// The buyer's watch found it (through the table's stream) and
	// notified the buyer; opening the notification leads to the part.
	waitLong(t, "the watch's trigger", 10*time.Second, func() bool {
		buyer.run("watch page", chromedp.Navigate(base+watchPath), chromedp.WaitVisible(chromedp.CSS("#triggers")))
		return strings.Contains(buyer.text("#triggers"), "아이오닉 5 배터리 팩")
	})
	if got := buyer.unread(); got != "1" {
		t.Errorf("buyer's unread after the watch's trigger: %q", got)
	}
	buyer.run("part_available", chromedp.Navigate(base+"/console/eecar/notifications/"),
		submitAndWait(`#notes li.unread[data-type="part_available"] a`), chromedp.WaitVisible(chromedp.CSS("#note-link")),
		submitAndWait("#note-link"), chromedp.WaitVisible(chromedp.CSS("#part-name")))
	if got := buyer.unread(); got != "0" {
		t.Errorf("buyer's unread after opening it: %q", got)
	}
	// A need: a bad number is refused on the form, then its matches.
	buyer.run("bad need", chromedp.Navigate(base+"/console/eecar/needs/"), chromedp.WaitVisible(chromedp.CSS("#need-form")),
		chromedp.SetValue(chromedp.CSS("#category"), "battery"),
		chromedp.SendKeys(chromedp.CSS("#materials"), "NCM811"),
		chromedp.SendKeys(chromedp.CSS("#targetApplication"), "ESS"),
		chromedp.SendKeys(chromedp.CSS("#minQuantity"), "two"),
		submitAndWait("#need-form button"), chromedp.WaitVisible(chromedp.CSS("#error")))
	if got := buyer.text("#error"); !strings.Contains(got, "Minimum quantity must be a whole number") {
		t.Errorf("bad need: %q", got)
	}
	buyer.run("need", chromedp.SetValue(chromedp.CSS("#minQuantity"), "1"),
		submitAndWait("#need-form button"), chromedp.WaitVisible(chromedp.CSS("#need-facts")))
	if got := buyer.text("#hits"); !strings.Contains(got, "아이오닉 5 배터리 팩") {
		t.Errorf("the need's matches: %q", got)
	}

	// The buyer switches to Korean and searches in Korean: the part, with
	// its match reasons.
	buyer.run("korean", chromedp.Navigate(base+"/console/eecar/"), chromedp.WaitVisible(chromedp.CSS("#lang-switch")),
		submitAndWait("#lang-switch"), chromedp.WaitVisible(chromedp.CSS("#search")))
	if got := buyer.text("h1"); got != "부품 검색" {
		t.Errorf("after the switch the title is %q", got)
	}
	buyer.run("search", chromedp.SendKeys(chromedp.CSS("#q"), "ESS용 중고 배터리 팩"),
		chromedp.SetValue(chromedp.CSS("#f-minsoh"), "80"),
		chromedp.SetValue(chromedp.CSS("#f-cathode"), "NCM"),
		submitAndWait("#search button"), chromedp.WaitVisible(chromedp.CSS("#hits")))
	hits := buyer.text("#hits")
	if !strings.Contains(hits, "아이오닉 5 배터리 팩") || !strings.Contains(hits, "₩8,500,000 (850만 원)") || !strings.Contains(hits, "일치 이유") {
		t.Errorf("Korean search shows:\n%s", hits)
	}
	// The reason names the matched words, in the glossary's canonical
	// (English) form: 배터리 팩 is battery-pack, 중고 is used.
	if why := buyer.text("#hits .why"); !strings.Contains(why, "battery-pack") || !strings.Contains(why, "used") {
		t.Errorf("match reason %q", why)
	}
	buyer.run("search shot", shot("console-eecar-search.png"))
	// The SOH filter leaves it out above 92.
	buyer.run("filtered out", chromedp.SetValue(chromedp.CSS("#f-minsoh"), "95"),
		submitAndWait("#search button"), chromedp.WaitVisible(chromedp.CSS("#hits-none")))

	// The buyer proposes; the seller is notified.
	if got := seller.unread(); got != "0" {
		t.Errorf("seller's unread before the proposal: %q", got)
	}
	buyer.run("propose", chromedp.Navigate(base+partPath), chromedp.WaitVisible(chromedp.CSS("#propose")),
		chromedp.SendKeys(chromedp.CSS("#quantity"), "2"),
		chromedp.SendKeys(chromedp.CSS("#priceOffer"), "8000000"),
		chromedp.SendKeys(chromedp.CSS("#message"), "두 팩 모두 구매 희망"),
		submitAndWait("#propose button"), chromedp.WaitVisible(chromedp.CSS("#p-status")))
	propPath := buyer.eval(`location.pathname`)
	if got := buyer.eval(`document.querySelector("#p-status").dataset.status`); got != "pending" {
		t.Errorf("new proposal is %q", got)
	}
	seller.run("reload", chromedp.Navigate(base+"/console/eecar/"), chromedp.WaitVisible(chromedp.CSS("#nav-unread")))
	if got := seller.unread(); got != "1" {
		t.Errorf("seller's unread after the proposal: %q", got)
	}
	// The seller opens the notification (marked read), then counters.
	seller.openNote("proposal_received")
	if got := seller.unread(); got != "0" {
		t.Errorf("seller's unread after opening it: %q", got)
	}
	seller.run("counter", chromedp.SendKeys(chromedp.CSS("#counter #priceOffer"), "8,200,000"),
		chromedp.SendKeys(chromedp.CSS("#counter #message"), "Can do 8.2M"),
		submitAndWait("#counter-send"), chromedp.WaitVisible(chromedp.CSS("#waiting")))
	if got := seller.eval(`document.querySelector("#p-status").dataset.status`); got != "negotiating" {
		t.Errorf("after the counter: %q", got)
	}
	// The buyer, notified, accepts.
	buyer.run("reload", chromedp.Navigate(base+"/console/eecar/"), chromedp.WaitVisible(chromedp.CSS("#nav-unread")))
	if got := buyer.unread(); got != "1" {
		t.Errorf("buyer's unread after the counter: %q", got)
	}
	buyer.openNote("proposal_negotiating")
	if got := buyer.text("#p-price"); !strings.HasPrefix(got, "₩8,200,000") {
		t.Errorf("the buyer sees the counter at %q", got)
	}
	buyer.run("accept", submitAndWait("#accept"), chromedp.WaitVisible(chromedp.CSS("#history")))
	if got := buyer.eval(`document.querySelector("#p-status").dataset.status`); got != "accepted" {
		t.Errorf("after accept: %q", got)
	}
	if got := buyer.eval(`String(document.querySelectorAll("#history tbody tr").length)`); got != "3" {
		t.Errorf("history rows: %s", got)
	}
	// Closed: who accepted and when, no one awaited; the history starts
	// with the first offer's terms, which the counter replaced.
	if got := buyer.text("#closed"); !strings.Contains(got, "수락했습니다") || buyer.eval(`String(document.querySelector("#p-to") === null)`) != "true" {
		t.Errorf("the accepted proposal says %q", got)
	}
	if got := buyer.text("#offer"); !strings.Contains(got, "₩8,000,000") || !strings.Contains(got, "두 팩 모두 구매 희망") {
		t.Errorf("the first offer's row: %q", got)
	}
	buyer.run("proposal shot", shot("console-eecar-proposal.png"))
	seller.run("seller notified", chromedp.Navigate(base+"/console/eecar/notifications/"),
		chromedp.WaitVisible(chromedp.CSS(`#notes li.unread[data-type="proposal_accepted"]`)))
	if got := seller.unread(); got != "1" {
		t.Errorf("seller's unread after the accept: %q", got)
	}
	seller.run("outbox", chromedp.Navigate(base+"/console/eecar/proposals/?box=all"), chromedp.WaitVisible(chromedp.CSS("#proposals")))
	if got := seller.text("#proposals"); !strings.Contains(got, "Busan ESS") || !strings.Contains(got, "accepted") {
		t.Errorf("seller's proposals: %q", got)
	}

	// Another company: the proposal, the edit form and the withdrawal of
	// the seller's part are 404; its own part page is readable (the
	// marketplace is shared) but offers no edit.
	other := httpSignIn(t, base, "eecar", otherKey)
	get(t, other, base+propPath, http.StatusNotFound)
	get(t, other, base+"/console/eecar/my/"+partID+"/edit", http.StatusNotFound)
	if body := get(t, other, base+partPath, http.StatusOK); strings.Contains(body, `id="edit"`) {
		t.Error("another company is offered the edit of the part")
	}
	csrf := csrfOf(t, get(t, other, base+"/console/eecar/", http.StatusOK))
	resp, err := other.PostForm(base+"/console/eecar/my/"+partID+"/withdraw", url.Values{"csrf": {csrf}, "confirm": {"yes"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("another company withdrawing the part = %d", resp.StatusCode)
	}
	resp, err = other.PostForm(base+propPath+"/respond", url.Values{"csrf": {csrf}, "action": {"reject"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("another company answering the proposal = %d", resp.StatusCode)
	}
	// Forms without a CSRF token are refused, and change nothing.
	for _, f := range []struct {
		path string
		form url.Values
	}{
		{"/console/eecar/proposals/", url.Values{"to": {"x"}, "part": {partID}, "type": {"buy"}}},
		{"/console/eecar/watches/", url.Values{"category": {"battery"}}},
		{"/console/eecar/lang", url.Values{"lang": {"ko"}}},
	} {
		resp, err := other.PostForm(base+f.path, f.form)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "security token") {
			t.Errorf("POST %s without CSRF = %d", f.path, resp.StatusCode)
		}
	}
	// The part form is multipart (images): refused the same way.
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	_ = mw.WriteField("name", "csrf victim")
	_ = mw.WriteField("category", "battery")
	_ = mw.WriteField("manufacturer", "X")
	_ = mw.WriteField("price", "1")
	mw.Close()
	resp, err = other.Post(base+"/console/eecar/my/new", mw.FormDataContentType(), &mp)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("multipart POST without CSRF = %d", resp.StatusCode)
	}
	if body := get(t, other, base+"/console/eecar/my/", http.StatusOK); strings.Contains(body, "csrf victim") {
		t.Error("a part was listed without a CSRF token")
	}
	if body := get(t, other, base+"/console/eecar/watches/", http.StatusOK); regexp.MustCompile(`/console/eecar/watches/w_`).MatchString(body) {
		t.Error("a watch was created without a CSRF token")
	}
	// Accept-Language chooses Korean when no switch was used.
	req, _ := http.NewRequest(http.MethodGet, base+"/console/eecar/", nil)
	req.Header.Set("Accept-Language", "ko-KR,ko;q=0.9,en;q=0.5")
	resp, err = other.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "부품 검색") || resp.Header.Get("Content-Language") != "ko" {
		t.Errorf("Accept-Language ko: %s", resp.Header.Get("Content-Language"))
	}

	// The seller edits the part, then withdraws it.
	seller.run("edit", chromedp.Navigate(base+"/console/eecar/my/"+partID+"/edit"), chromedp.WaitVisible(chromedp.CSS("#part-form")))
	if got := seller.eval(`document.querySelector("#soh").value + " " + document.querySelector("#price").value`); got != "92 8500000" {
		t.Errorf("the edit form holds %q", got)
	}
	seller.run("save", chromedp.SetValue(chromedp.CSS("#price"), "7900000"),
		submitAndWait("#save"), chromedp.WaitVisible(chromedp.CSS("#part-name")), shot("console-eecar-part.png"))
	if got := seller.text("#part-price"); got != "₩7,900,000" {
		t.Errorf("after the edit: %q", got)
	}
	seller.run("my parts", chromedp.Navigate(base+"/console/eecar/my/"), chromedp.WaitVisible(chromedp.CSS("#my-parts")))
	if got := seller.text("#my-parts"); !strings.Contains(got, "아이오닉 5") {
		t.Errorf("my parts: %q", got)
	}
	seller.run("withdraw", chromedp.Navigate(base+partPath), chromedp.WaitVisible(chromedp.CSS("#withdraw")),
		submitAndWait("#withdraw"), chromedp.WaitVisible(chromedp.CSS("#msg")))
	if got := seller.text("#msg"); got != "Part withdrawn." {
		t.Errorf("after withdraw: %q", got)
	}
	get(t, other, base+partPath, http.StatusNotFound)

	// A revoked key ends its console sessions at their next request (the
	// session keeps the key's hash), and revoking it twice says so.
	if code, _, errs := s.cli(dir, "key", "revoke", "--key", otherKey); code != 0 {
		t.Fatalf("key revoke: %d %s", code, errs)
	}
	if body := get(t, other, base+"/console/eecar/", http.StatusOK); !strings.Contains(body, `action="/console/signin"`) {
		t.Errorf("after revoking its key the company still sees its marketplace")
	}
	if code, _, errs := s.cli(dir, "key", "revoke", "--key", otherKey); code == 0 || !strings.Contains(errs, "no such API key") {
		t.Errorf("revoking a revoked key: %d %s", code, errs)
	}
}
