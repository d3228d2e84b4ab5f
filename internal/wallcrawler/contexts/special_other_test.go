//go:build !unix

package contexts_test

import "testing"

// mkSpecial adds nothing where FIFOs are not available.
func mkSpecial(t *testing.T, dir string) { t.Helper() }
