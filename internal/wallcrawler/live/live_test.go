package live

import "testing"

func TestTranslate(t *testing.T) {
	for _, c := range []struct {
		name   string
		in     inputMsg
		method string
	}{
		{"click", inputMsg{T: "mouse", Type: "mousePressed", X: 10, Y: 20, Button: "left", ClickCount: 1}, "Input.dispatchMouseEvent"},
		{"move", inputMsg{T: "mouse", Type: "mouseMoved", X: 1, Y: 1}, "Input.dispatchMouseEvent"},
		{"wheel", inputMsg{T: "wheel", X: 1, Y: 1, DY: 120}, "Input.dispatchMouseEvent"},
		{"key", inputMsg{T: "key", Type: "keyDown", Key: "a", Code: "KeyA", Text: "a", KeyCode: 65}, "Input.dispatchKeyEvent"},
		{"resize", inputMsg{T: "resize", Width: 800, Height: 600}, "Emulation.setDeviceMetricsOverride"},
		{"unknown kind", inputMsg{T: "eval", Type: "Runtime.evaluate"}, ""},
		{"unknown mouse type", inputMsg{T: "mouse", Type: "mouseWheel"}, ""},
		{"bad button", inputMsg{T: "mouse", Type: "mousePressed", Button: "x"}, ""},
		{"far away", inputMsg{T: "mouse", Type: "mouseMoved", X: 1e9}, ""},
		{"long text", inputMsg{T: "key", Type: "keyDown", Text: "0123456789"}, ""},
		{"tiny", inputMsg{T: "resize", Width: 10, Height: 600}, ""},
		{"huge", inputMsg{T: "resize", Width: 800, Height: 100000}, ""},
	} {
		if got, _ := translate(c.in); got != c.method {
			t.Errorf("%s: %q, want %q", c.name, got, c.method)
		}
	}
}
