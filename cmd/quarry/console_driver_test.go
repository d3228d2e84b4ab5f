package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// driver drives one Chromium for a console test: each helper fails the
// test on error and waits with a deadline.
type driver struct {
	t     *testing.T
	ctx   context.Context
	base  string
	shots string // where screenshots go
}

// newDriver starts a browser against base. QUARRY_CONSOLE_SCREENSHOTS=1
// makes shot write into docs/img.
func newDriver(t *testing.T, base string) *driver {
	d := &driver{t: t, ctx: consoleBrowser(t), base: base, shots: t.TempDir()}
	if os.Getenv("QUARRY_CONSOLE_SCREENSHOTS") != "" {
		d.shots = filepath.Join("..", "..", "docs", "img")
	}
	return d
}

func (d *driver) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	d.t.Helper()
	tctx, cancel := context.WithTimeout(d.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, actions...); err != nil {
		// Where the browser stood, to see why.
		dctx, cancel := context.WithTimeout(d.ctx, 5*time.Second)
		defer cancel()
		page, _ := chromedp.Run(dctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
		d.t.Fatalf("%s: %v\n%s", what, err, page)
	}
}

// text returns the text of the element sel. A page with data-refresh
// reloads itself (console.js): when the reload replaces the element
// between its query and the read ("No node with given id found"), the
// element is queried again.
func (d *driver) text(sel string) string {
	d.t.Helper()
	tctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
	defer cancel()
	for {
		s, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS(sel)))
		if err == nil {
			return s
		}
		if !strings.Contains(err.Error(), "No node with given id") || tctx.Err() != nil {
			d.t.Fatalf("text of %s: %v", sel, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (d *driver) eval(js string) string {
	d.t.Helper()
	s, err := chromedp.Run(d.ctx, chromedp.Evaluate[string](js))
	if err != nil {
		d.t.Fatalf("evaluate %s: %v", js, err)
	}
	return s
}

// open navigates to path and waits for sel.
func (d *driver) open(path, sel string) {
	d.t.Helper()
	d.run("open "+path, chromedp.Navigate(d.base+path), chromedp.WaitVisible(chromedp.CSS(sel)))
}

// shot saves a screenshot of the viewport (small PNGs for the docs).
func (d *driver) shot(name string) {
	d.t.Helper()
	png, err := chromedp.Run(d.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		d.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(d.shots, name), png, 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// submit clicks a submit button and waits for the next page's load.
func (d *driver) submit(sel string) chromedp.Action[chromedp.Void] { return submitAndWait(sel) }

// submitAndWait clicks a submit button and waits for the next page's load.
func submitAndWait(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("window.stale = true")); err != nil {
			return err
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
			return err
		}
		for {
			done, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!window.stale && document.readyState === "complete"`))
			if err == nil && done {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
}

// signIn signs in through the form.
func (d *driver) signIn(realm, cred string) {
	d.t.Helper()
	d.run("sign in as "+realm, chromedp.Navigate(d.base+"/console/signin"), chromedp.WaitVisible(chromedp.CSS("#signin")),
		chromedp.SetValue(chromedp.CSS("#realm"), realm), chromedp.SendKeys(chromedp.CSS("#credential"), cred),
		d.submit("#signin button"), chromedp.WaitVisible(chromedp.CSS("#who")))
}

// postNoCSRF posts form without a CSRF token with hc's session and
// expects the 403 refusal.
func postNoCSRF(t *testing.T, hc *http.Client, u string, form url.Values) {
	t.Helper()
	resp, err := hc.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "security token") {
		t.Errorf("POST %s without a CSRF token = %d", u, resp.StatusCode)
	}
}
